package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"

	"github.com/stampede-bench/stampede/bench/endpoint"
	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/internal/py"
)

// The result file's name is Python's, and holds the server's model id when
// --model is omitted: an id of a few hundred bytes makes a name the
// filesystem refuses (ENAMETOOLONG), which Python finds only when it
// saves, after the whole run. stampede checks the name and its directory
// before the clock starts: a directory it cannot write to is an error
// then, and a name too long is shortened, the same way at the check and
// at the save.

// pathMax is Linux's PATH_MAX: the longest path, with its NUL, the
// kernel takes in one call.
const pathMax = 4096

// nameHashLen is how many hex digits of the cut-out text's SHA-256 a
// shortened name carries, so that two long names cut to the same length
// still differ.
const nameHashLen = 8

// dateTailLen is the "-{date}" tail of a generated name, kept when the
// name is shortened so that runs still sort by time.
var dateTailLen = len("-" + pyout.DateLayout)

// checkResultPath is the check before the clock starts, when the run saves
// a result (or draws a timeline beside one): the result directory is
// created and written to once, and a name whose files (the result, its
// sidecar and side files) would not fit the filesystem's NAME_MAX or
// PATH_MAX is replaced by fitResultPath's, which the save uses too; it
// says so on stderr. The name is the one the run would save under now,
// its date aside. A cluster run has its directory checked only.
func (r *run) checkResultPath(model endpoint.Model) error {
	c := r.cfg
	if !c.SaveResult && !c.AppendResult && !c.PlotTimeline {
		return nil
	}
	settings := r.runSettings(model, nil, 0)
	name, err := pyout.ResultFilename(&settings, time.Now().Format(pyout.DateLayout))
	if err != nil {
		return err
	}
	dir := filepath.Dir(name)
	if err := checkWritableDir(dir); err != nil {
		return resultDirError(c.ResultDir, dir, err)
	}
	if c.Clustered() {
		// A cluster's agent 0 saves through bench/cluster's merge, under
		// Python's name.
		return nil
	}
	r.nameMax = nameMaxOf(dir)
	fitted, err := fitResultPath(name, r.nameMax)
	if err != nil {
		return err
	}
	if fitted != name {
		fmt.Fprintf(r.stderr, "stampede: the result file's name (%d bytes) and its side files' do not fit this filesystem's "+
			"limits (%d bytes a name, %d a path); saving as %s instead (the date is the save's)\n",
			len(filepath.Base(name)), r.nameMax, pathMax-1, fitted)
	}
	if c.AppendResult {
		// An existing file is appended to, so it must open for writing.
		if f, err := os.OpenFile(fitted, os.O_WRONLY|os.O_APPEND, 0); err == nil {
			f.Close()
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("--append-result: result file %s cannot be written: %w", fitted, err)
		}
	}
	return nil
}

// resultDirError names the flag the unwritable directory came from.
func resultDirError(flagDir, dir string, err error) error {
	if flagDir != "" {
		return fmt.Errorf("--result-dir %s: the result cannot be saved there: %w", flagDir, err)
	}
	return fmt.Errorf("result directory %s: the result cannot be saved there: %w", dir, err)
}

// checkWritableDir creates dir (with parents) and a file in it, which it
// removes again.
func checkWritableDir(dir string) error {
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

// resultSidePaths are the files named after the result file: the result
// itself, the sidecar, the PyTorch records, the timeline and the dataset
// figure.
func resultSidePaths(path string) []string {
	return []string{path, report.SidecarPath(path), pyout.PyTorchPath(path),
		report.TimelinePath(path), report.DatasetStatsPath(path)}
}

// fitResultPath returns path unchanged when every file named after it fits
// nameMax bytes a name and PATH_MAX a path; otherwise the name's stem is
// cut in the middle to fit, the cut-out text replaced by "-" and its hash
// (nameHashLen hex digits), the stem's "-{date}" tail and the extension
// kept. It is an error when even that cannot fit (a directory path near
// PATH_MAX).
func fitResultPath(path string, nameMax int) (string, error) {
	over := 0
	for _, p := range resultSidePaths(path) {
		over = max(over, len(filepath.Base(p))-nameMax, len(p)-(pathMax-1))
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
			base, nameMax, pathMax-1, dir)
	}
	for head > 0 && !utf8.RuneStart(stem[head]) {
		head-- // keep the name valid UTF-8
	}
	sum := sha256.Sum256([]byte(stem[head : len(stem)-tail]))
	short := stem[:head] + "-" + hex.EncodeToString(sum[:])[:nameHashLen] + stem[len(stem)-tail:] + ext
	return dir + short, nil
}
