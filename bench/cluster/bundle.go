package cluster

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A results bundle carries the files a run saved through a log, the one
// output of a Kubernetes pod that outlives it (--results-to-log). On the
// log it reads:
//
//	=== stampede results ID begin: N files ===
//	stampede-results ID 1 <base64>
//	stampede-results ID 2 <base64>
//	...
//	=== stampede results ID end: L lines, B bytes, sha256 HEX ===
//
// ID is 8 random hex digits, so that bundles of several agents read from
// one log (kubectl logs -l ... --prefix) stay apart. The data lines,
// numbered from 1, are the base64 (standard alphabet, padded) of one gzip
// stream of a tar archive of the files, at most BundleLineBytes decoded
// bytes a line; B and HEX are the length and SHA-256 of that gzip stream.
// Each marker and data line is found anywhere in its line, so that a
// prefix kubectl adds (--prefix, --timestamps) and lines of other output
// between them are passed over.

// BundleLineBytes is how many bytes of the gzip stream one data line
// carries: 57, 76 base64 characters, within every log line limit.
const BundleLineBytes = 57

const (
	bundleMarker = "=== stampede results "
	bundleData   = "stampede-results "
)

// kubeletLogMaxBytes is the kubelet's default containerLogMaxSize: a
// container's log is rotated at 10 MiB and kubectl logs reads the newest
// file only, so a bundle larger than that is cut in a pod's log.
const kubeletLogMaxBytes = 10 << 20

// WriteBundle writes the files at paths to w as one bundle, under their
// base names; zero paths give a bundle of no files, which says that the
// run saved nothing. A bundle too large for a pod's log is warned of on
// stderr.
func WriteBundle(w, stderr io.Writer, paths []string) error {
	var z bytes.Buffer
	gz := gzip.NewWriter(&z)
	tw := tar.NewWriter(gz)
	seen := map[string]string{}
	for _, path := range paths {
		name := filepath.Base(path)
		if other, ok := seen[name]; ok {
			return fmt.Errorf("results bundle: %s and %s have the same name", other, path)
		}
		seen[name] = path
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("results bundle: %w", err)
		}
		hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("results bundle: %s: %w", path, err)
		}
		if _, err := tw.Write(data); err != nil {
			return fmt.Errorf("results bundle: %s: %w", path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	var idb [4]byte
	_, _ = rand.Read(idb[:])
	id := hex.EncodeToString(idb[:])
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s%s begin: %d files ===\n", bundleMarker, id, len(paths))
	data := z.Bytes()
	lines := 0
	line := make([]byte, base64.StdEncoding.EncodedLen(BundleLineBytes))
	for off := 0; off < len(data); off += BundleLineBytes {
		chunk := data[off:min(off+BundleLineBytes, len(data))]
		lines++
		n := base64.StdEncoding.EncodedLen(len(chunk))
		base64.StdEncoding.Encode(line, chunk)
		fmt.Fprintf(bw, "%s%s %d %s\n", bundleData, id, lines, line[:n])
	}
	sum := sha256.Sum256(data)
	fmt.Fprintf(bw, "%s%s end: %d lines, %d bytes, sha256 %x ===\n", bundleMarker, id, lines, len(data), sum)
	if err := bw.Flush(); err != nil {
		return err
	}
	if logBytes := lines * (len(bundleData) + 10 + len(line)); logBytes > kubeletLogMaxBytes {
		fmt.Fprintf(stderr, "WARNING: the results printed for --results-to-log take %.1f MiB of the log: a Kubernetes pod's log "+
			"is rotated at 10 MiB by default and kubectl logs reads the newest part only; keep the files on a volume too (docs/cluster.md)\n",
			float64(logBytes)/(1<<20))
	}
	return nil
}

// ErrNoBundle is ReadBundles' error for input with no bundle in it.
var ErrNoBundle = errors.New("no stampede results in the input: was the run started with --results-to-log, and is this its agent 0's log?")

// BundleFile is one file of a bundle: its name and size.
type BundleFile struct {
	Name string
	Size int64
}

// Bundle is one bundle read back: its id, its files' names and sizes,
// and its archive, checked against the end marker and read once for its
// names, but not unpacked: Extract gives each file's bytes as they are
// decoded, so a file of any size is never held whole.
type Bundle struct {
	ID    string
	Files []BundleFile
	data  []byte // the gzip stream of the tar archive
}

// Extract calls fn with each file of the bundle in turn and a reader of
// its bytes, valid until fn returns; it stops at fn's first error.
func (b *Bundle) Extract(fn func(name string, r io.Reader) error) error {
	zr, err := gzip.NewReader(bytes.NewReader(b.data))
	if err != nil {
		return fmt.Errorf("results %s: not gzip: %w", b.ID, err)
	}
	tr := tar.NewReader(zr)
	for _, f := range b.Files {
		hdr, err := tr.Next()
		if err != nil || hdr.Name != f.Name || hdr.Size != f.Size {
			return fmt.Errorf("results %s: the archive changed while read: %v", b.ID, err)
		}
		n := &countingReader{r: io.LimitReader(tr, f.Size)}
		if err := fn(f.Name, n); err != nil {
			return err
		}
		if n.n != f.Size {
			if _, err := io.Copy(io.Discard, n); err != nil || n.n != f.Size {
				return fmt.Errorf("results %s: %s: cut short in the archive", b.ID, f.Name)
			}
		}
	}
	return nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += int64(k)
	return k, err
}

// maxBundleBytes bounds the files one bundle may expand to, so that a
// forged log cannot make the reader write more than a run could save.
const maxBundleBytes = 8 << 30

// maxBundleLogLine is the longest log line searched for a bundle's
// marker or data: a bundle's own lines are a few hundred bytes with
// kubectl's prefixes; a longer line (another program's output, a JSON
// document printed whole) is passed over, whatever its length.
const maxBundleLogLine = 64 << 10

// openBundle is a bundle whose begin marker has been read.
type openBundle struct {
	id      string
	files   int
	line    int // first line of the begin marker
	lines   int // data lines read
	data    []byte
	dataErr error // the first bad data line
}

// ReadBundles reads every bundle in r. A bundle whose end marker is
// missing is an error (the log was cut short), as is a data line missing,
// repeated or out of order, and a length or checksum that does not match;
// everything outside the bundles' lines is passed over, lines of any
// length. It holds each bundle's compressed archive (about three quarters
// of its lines' bytes), never the files it unpacks to.
func ReadBundles(r io.Reader) ([]Bundle, error) {
	br := bufio.NewReaderSize(r, maxBundleLogLine)
	open := map[string]*openBundle{}
	var order []*openBundle
	var done []Bundle
	for n := 1; ; n++ {
		raw, err := br.ReadSlice('\n')
		long := false
		for err == bufio.ErrBufferFull {
			long = true
			_, err = br.ReadSlice('\n')
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("reading the log: %w", err)
		}
		if len(raw) == 0 && err == io.EOF {
			break
		}
		if !long {
			if err := readBundleLine(n, string(bytes.TrimSuffix(bytes.TrimSuffix(raw, []byte("\n")), []byte("\r"))), open, &order, &done); err != nil {
				return nil, err
			}
		}
		if err == io.EOF {
			break
		}
	}
	for _, b := range order {
		if open[b.id] == b {
			return nil, fmt.Errorf("results %s (begun at line %d) have no end marker after %d data lines: the log is truncated "+
				"(the pod's log rotated, kubectl logs --tail or --limit-bytes, or the run was killed while printing them); "+
				"keep the results on a volume instead (docs/cluster.md)", b.id, b.line, b.lines)
		}
	}
	if len(done) == 0 {
		return nil, ErrNoBundle
	}
	return done, nil
}

// readBundleLine reads log line n: a marker opens or ends a bundle, a
// data line adds to its bundle, any other line is passed over.
func readBundleLine(n int, text string, open map[string]*openBundle, order *[]*openBundle, done *[]Bundle) error {
	if i := strings.Index(text, bundleMarker); i >= 0 {
		id, rest, ok := strings.Cut(text[i+len(bundleMarker):], " ")
		if !ok || !validBundleID(id) {
			return nil
		}
		switch {
		case strings.HasPrefix(rest, "begin: "):
			var files int
			if _, err := fmt.Sscanf(rest, "begin: %d files ===", &files); err != nil || files < 0 {
				return fmt.Errorf("line %d: bad begin marker of results %s: %q", n, id, text[i:])
			}
			if _, dup := open[id]; dup {
				return fmt.Errorf("line %d: results %s begin again before their end: the log holds two copies, or a cut one", n, id)
			}
			b := &openBundle{id: id, files: files, line: n}
			open[id] = b
			*order = append(*order, b)
		case strings.HasPrefix(rest, "end: "):
			b := open[id]
			if b == nil {
				return fmt.Errorf("line %d: the end of results %s without their begin: the log starts after it (kubectl logs --tail, --since, or a rotated log)", n, id)
			}
			got, err := b.finish(rest)
			if err != nil {
				return fmt.Errorf("line %d: results %s (begun at line %d): %w", n, id, b.line, err)
			}
			*done = append(*done, got)
			delete(open, id)
		}
		return nil
	}
	i := strings.Index(text, bundleData)
	if i < 0 {
		return nil
	}
	fields := strings.Fields(text[i+len(bundleData):])
	if len(fields) != 3 {
		return nil
	}
	b := open[fields[0]]
	if b == nil || b.dataErr != nil {
		return nil
	}
	seq, err := strconv.Atoi(fields[1])
	switch {
	case err != nil:
		return nil
	case seq != b.lines+1:
		b.dataErr = fmt.Errorf("data line %d where line %d was due (log line %d): lines are missing or repeated", seq, b.lines+1, n)
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(fields[2])
	if err != nil || len(raw) == 0 || len(raw) > BundleLineBytes {
		b.dataErr = fmt.Errorf("data line %d (log line %d) is not the base64 of 1 to %d bytes", seq, n, BundleLineBytes)
		return nil
	}
	if len(b.data)+len(raw) > maxBundleBytes {
		b.dataErr = fmt.Errorf("more than %d bytes", maxBundleBytes)
		return nil
	}
	b.lines++
	b.data = append(b.data, raw...)
	return nil
}

func validBundleID(id string) bool {
	if len(id) != 8 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

// finish checks an end marker against what was read, and the archive's
// names and sizes in one pass over it that keeps none of its files.
func (b *openBundle) finish(end string) (Bundle, error) {
	var lines, size int
	var sum string
	if _, err := fmt.Sscanf(end, "end: %d lines, %d bytes, sha256 %64s ===", &lines, &size, &sum); err != nil {
		return Bundle{}, fmt.Errorf("bad end marker %q", end)
	}
	if b.dataErr != nil {
		return Bundle{}, b.dataErr
	}
	if lines != b.lines || size != len(b.data) {
		return Bundle{}, fmt.Errorf("%d data lines of %d bytes read, the end marker says %d lines of %d bytes: lines are missing", b.lines, len(b.data), lines, size)
	}
	got := sha256.Sum256(b.data)
	if hex.EncodeToString(got[:]) != strings.ToLower(sum) {
		return Bundle{}, errors.New("the checksum does not match: the data lines were altered")
	}
	zr, err := gzip.NewReader(bytes.NewReader(b.data))
	if err != nil {
		return Bundle{}, fmt.Errorf("not gzip: %w", err)
	}
	tr := tar.NewReader(zr)
	out := Bundle{ID: b.id, data: b.data}
	seen := map[string]bool{}
	total := int64(0)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Bundle{}, fmt.Errorf("the archive: %w", err)
		}
		name := hdr.Name
		if hdr.Typeflag != tar.TypeReg || !safeBundleName(name) || seen[name] {
			return Bundle{}, fmt.Errorf("the archive holds %q, not a plain file of its own name", name)
		}
		seen[name] = true
		if hdr.Size < 0 || total+hdr.Size > maxBundleBytes {
			return Bundle{}, fmt.Errorf("%s: more than %d bytes", name, maxBundleBytes)
		}
		total += hdr.Size
		// Read through, not kept: the archive must hold every byte.
		if n, err := io.Copy(io.Discard, io.LimitReader(tr, hdr.Size)); err != nil || n != hdr.Size {
			return Bundle{}, fmt.Errorf("%s: cut short in the archive", name)
		}
		out.Files = append(out.Files, BundleFile{Name: name, Size: hdr.Size})
	}
	if len(out.Files) != b.files {
		return Bundle{}, fmt.Errorf("%d files, the begin marker says %d", len(out.Files), b.files)
	}
	return out, nil
}

// safeBundleName holds a bundle's names to one path element, so that
// extracting them writes inside the chosen directory only.
func safeBundleName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\\x00") && filepath.Base(name) == name
}

// WriteBundleFiles writes the files of bundles into dir, each through a
// temporary file renamed into place as it is decoded, and returns their
// paths. A bundle read twice (the same id) is written once; two files of
// one name from different bundles are an error, before anything is
// written.
func WriteBundleFiles(dir string, bundles []Bundle) ([]string, error) {
	from := map[string]string{}
	seenID := map[string]bool{}
	var todo []*Bundle
	for i := range bundles {
		b := &bundles[i]
		if seenID[b.ID] {
			continue
		}
		seenID[b.ID] = true
		for _, f := range b.Files {
			if other, ok := from[f.Name]; ok {
				return nil, fmt.Errorf("%s is in results %s and in results %s: extract one agent's log at a time, or into separate directories", f.Name, other, b.ID)
			}
			from[f.Name] = b.ID
		}
		todo = append(todo, b)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, b := range todo {
		err := b.Extract(func(name string, r io.Reader) error {
			path := filepath.Join(dir, name)
			if err := writeFileFrom(dir, name, r); err != nil {
				return fmt.Errorf("writing %s: %w", path, err)
			}
			paths = append(paths, path)
			return nil
		})
		if err != nil {
			return paths, err
		}
	}
	return paths, nil
}

// writeFileFrom writes r's bytes to dir/name through a temporary file of
// dir renamed into place.
func writeFileFrom(dir, name string, r io.Reader) error {
	tmp, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return err
	}
	_, werr := io.Copy(tmp, r)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
