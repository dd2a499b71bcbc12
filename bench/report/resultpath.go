package report

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/internal/py"
)

// A result file's name is Python's, and holds the server's model id when
// --model is omitted: an id of a few hundred bytes makes a name the
// filesystem refuses. The run checks the name and its directory before the
// clock starts with these, and shortens a name too long the same way at
// the check and at the save.

// PathMax is Linux's PATH_MAX: the longest path, with its NUL, the
// kernel takes in one call.
const PathMax = 4096

// nameHashLen is how many hex digits of the cut-out text's SHA-256 a
// shortened name carries, so that two long names cut to the same length
// still differ.
const nameHashLen = 8

// dateTailLen is the "-{date}" tail of a generated name, kept when the
// name is shortened so that runs still sort by time.
var dateTailLen = len("-" + pyout.DateLayout)

// CheckWritableDir creates dir (with parents) and a file in it, which it
// removes again.
func CheckWritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".stampede-write-check-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// SidePaths are the files named after the result file: the result
// itself, the sidecar, the PyTorch records, the timeline and the dataset
// figure.
func SidePaths(path string) []string {
	return []string{path, SidecarPath(path), pyout.PyTorchPath(path),
		TimelinePath(path), DatasetStatsPath(path)}
}

// FitResultPath returns path unchanged when every file named after it fits
// nameMax bytes a name and PATH_MAX a path; otherwise the name's stem is
// cut in the middle to fit, the cut-out text replaced by "-" and its hash
// (nameHashLen hex digits), the stem's "-{date}" tail and the extension
// kept. It is an error when even that cannot fit (a directory path near
// PATH_MAX).
func FitResultPath(path string, nameMax int) (string, error) {
	over := 0
	for _, p := range SidePaths(path) {
		over = max(over, len(filepath.Base(p))-nameMax, len(p)-(PathMax-1))
	}
	if over == 0 {
		return path, nil
	}
	dir, base := filepath.Split(path)
	stem, ext := py.SplitExt(base)
	cut := over + 1 + nameHashLen // the cut text gives way to "-" + hash
	tail := min(dateTailLen, len(stem))
	head := len(stem) - tail - cut
	if head < 1 {
		return "", fmt.Errorf("result file %s: no name fits this filesystem's limits (%d bytes a name, %d a path) in %s",
			base, nameMax, PathMax-1, dir)
	}
	for head > 0 && !utf8.RuneStart(stem[head]) {
		head-- // keep the name valid UTF-8
	}
	sum := sha256.Sum256([]byte(stem[head : len(stem)-tail]))
	short := stem[:head] + "-" + hex.EncodeToString(sum[:])[:nameHashLen] + stem[len(stem)-tail:] + ext
	return dir + short, nil
}
