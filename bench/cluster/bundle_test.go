package cluster

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// bundleFiles writes files of several kinds (JSON, binary, empty, longer
// than many lines) into a directory and returns their paths and contents.
func bundleFiles(t testing.TB) ([]string, map[string][]byte) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	bin := make([]byte, 10_000)
	for i := range bin {
		bin[i] = byte(r.Uint32())
	}
	want := map[string][]byte{
		"run.json":            []byte(`{"completed": 90, "name": "\u00e9"}` + "\n"),
		"run.stampede.json":   []byte(`{"version": 1}`),
		"partial.agent-0.bin": bin,
		"empty.txt":           {},
	}
	var paths []string
	for _, name := range []string{"run.json", "run.stampede.json", "partial.agent-0.bin", "empty.txt"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, want[name], 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths, want
}

func writeTestBundle(t testing.TB, paths []string) string {
	var b bytes.Buffer
	if err := WriteBundle(&b, io.Discard, paths); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// contents is each file of b, extracted into memory.
func contents(t testing.TB, b Bundle) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := b.Extract(func(name string, r io.Reader) error {
		data, err := io.ReadAll(r)
		out[name] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func checkFiles(t *testing.T, got Bundle, want map[string][]byte) {
	t.Helper()
	if len(got.Files) != len(want) {
		t.Fatalf("%d files, want %d", len(got.Files), len(want))
	}
	data := contents(t, got)
	for _, f := range got.Files {
		if !bytes.Equal(data[f.Name], want[f.Name]) || f.Size != int64(len(want[f.Name])) {
			t.Errorf("%s: %d bytes (size %d) differ from the %d saved", f.Name, len(data[f.Name]), f.Size, len(want[f.Name]))
		}
	}
}

// TestBundleRoundTrip reads back, byte for byte, the files of a bundle
// printed between other output, with kubectl's prefixes on every line,
// and writes them into a directory.
func TestBundleRoundTrip(t *testing.T) {
	paths, want := bundleFiles(t)
	text := writeTestBundle(t, paths)
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if len(line) > 160 {
			t.Fatalf("a line of %d bytes: %q", len(line), line)
		}
	}
	prefixed := func(s string) string {
		var b strings.Builder
		for _, l := range strings.SplitAfter(s, "\n") {
			if l != "" {
				b.WriteString("[pod/stampede-0-x7k2p/stampede] 2026-12-02T01:02:03.456789012Z " + l)
			}
		}
		return b.String()
	}
	cases := map[string]string{
		"plain":    "============ Serving Benchmark Result ============\n" + text + "done\n",
		"kubectl":  prefixed("block\n" + text),
		"garbage":  "noise\n" + strings.Replace(text, "\n", "\nstampede-results deadbeef 1 AAAA\n\x00\xff binary junk\n=== stampede results zz begin: 1 files ===\n", 3) + "tail\n",
		"no final": strings.TrimSuffix(text, "\n"),
	}
	for name, log := range cases {
		t.Run(name, func(t *testing.T) {
			bundles, err := ReadBundles(strings.NewReader(log))
			if err != nil {
				t.Fatal(err)
			}
			if len(bundles) != 1 {
				t.Fatalf("%d bundles, want 1", len(bundles))
			}
			checkFiles(t, bundles[0], want)
		})
	}
	bundles, _ := ReadBundles(strings.NewReader(text))
	dir := filepath.Join(t.TempDir(), "out")
	written, err := WriteBundleFiles(dir, bundles)
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != len(want) {
		t.Fatalf("wrote %v", written)
	}
	for _, p := range written {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, want[filepath.Base(p)]) {
			t.Errorf("%s differs from the file saved", p)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestBundlesOfTwoAgents reads two agents' bundles interleaved line by
// line, as kubectl logs -l of several pods may give them, and keeps each
// agent's files apart; the same bundle read twice is written once.
func TestBundlesOfTwoAgents(t *testing.T) {
	paths, _ := bundleFiles(t)
	a := strings.Split(writeTestBundle(t, paths[:2]), "\n")
	b := strings.Split(writeTestBundle(t, paths[2:3]), "\n")
	var log strings.Builder
	for i := range max(len(a), len(b)) {
		if i < len(a) && a[i] != "" {
			log.WriteString("[pod/stampede-0/stampede] " + a[i] + "\n")
		}
		if i < len(b) && b[i] != "" {
			log.WriteString("[pod/stampede-1/stampede] " + b[i] + "\n")
		}
	}
	bundles, err := ReadBundles(strings.NewReader(log.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(bundles) != 2 || len(bundles[0].Files)+len(bundles[1].Files) != 3 {
		t.Fatalf("bundles %+v", bundles)
	}
	twice := append(bundles, bundles[0])
	written, err := WriteBundleFiles(t.TempDir(), twice)
	if err != nil || len(written) != 3 {
		t.Fatalf("written %v, %v", written, err)
	}
}

// TestBundleDamage names each way a log can fail its bundle.
func TestBundleDamage(t *testing.T) {
	paths, _ := bundleFiles(t)
	text := writeTestBundle(t, paths)
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	join := func(ls []string) string { return strings.Join(ls, "\n") + "\n" }
	dropLine := append(append([]string{}, lines[:3]...), lines[4:]...)
	altered := append([]string{}, lines...)
	// Swap two base64 characters of one data line: still base64, other bytes.
	f := strings.Fields(altered[2])
	data := []byte(f[3])
	data[0], data[1] = data[1], data[0]
	if data[0] == data[1] {
		data[0] ^= 1
	}
	altered[2] = strings.Join(append(f[:3], string(data)), " ")
	cases := []struct {
		name, log, want string
	}{
		{"truncated", join(lines[:len(lines)/2]), "no end marker after"},
		{"truncated mid-line", text[:len(text)/2], "the log is truncated"},
		{"line missing", join(dropLine), "lines are missing"},
		{"line repeated", join(append(lines[:3], lines[2:]...)), "missing or repeated"},
		{"altered", join(altered), "checksum does not match"},
		{"end without begin", join(lines[1:]), "without their begin"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadBundles(strings.NewReader(c.log))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
		})
	}
	if _, err := ReadBundles(strings.NewReader("just a block\n")); !errors.Is(err, ErrNoBundle) {
		t.Errorf("a log without a bundle: %v, want ErrNoBundle", err)
	}
}

// TestBundleOfNothing is the bundle of a run that saved no file.
func TestBundleOfNothing(t *testing.T) {
	bundles, err := ReadBundles(strings.NewReader(writeTestBundle(t, nil)))
	if err != nil || len(bundles) != 1 || len(bundles[0].Files) != 0 {
		t.Fatalf("%+v, %v", bundles, err)
	}
}

func TestBundleNames(t *testing.T) {
	for name, ok := range map[string]bool{"run.json": true, "a b.json": true, "": false, ".": false, "..": false,
		"../x": false, "/etc/passwd": false, "d/x": false, `a\b`: false, "a\x00": false} {
		if safeBundleName(name) != ok {
			t.Errorf("safeBundleName(%q) = %v", name, !ok)
		}
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.Mkdir(a, 0o755)
	os.Mkdir(b, 0o755)
	os.WriteFile(filepath.Join(a, "x.json"), nil, 0o600)
	os.WriteFile(filepath.Join(b, "x.json"), nil, 0o600)
	if err := WriteBundle(new(bytes.Buffer), io.Discard, []string{filepath.Join(a, "x.json"), filepath.Join(b, "x.json")}); err == nil {
		t.Error("two files of one name bundled")
	}
}

// FuzzReadBundles holds the reader of bundles, which reads a log from
// outside, to its bounds: whatever the bytes, it returns, and what it
// returns has names WriteBundleFiles may write.
func FuzzReadBundles(f *testing.F) {
	paths, _ := bundleFiles(f)
	text := writeTestBundle(f, paths)
	f.Add(text)
	f.Add(text[:len(text)/2])
	f.Add(writeTestBundle(f, nil))
	f.Add("[pod/p/c] " + strings.ReplaceAll(text, "\n", "\n[pod/p/c] "))
	f.Add("=== stampede results 0badc0de begin: 1 files ===\nstampede-results 0badc0de 1 H4sIAAAA\n=== stampede results 0badc0de end: 1 lines, 6 bytes, sha256 00 ===\n")
	f.Fuzz(func(t *testing.T, log string) {
		bundles, err := ReadBundles(strings.NewReader(log))
		if err != nil {
			return
		}
		for _, b := range bundles {
			for _, file := range b.Files {
				if !safeBundleName(file.Name) {
					t.Fatalf("unsafe name %q read", file.Name)
				}
			}
		}
	})
}

// TestBundleTooLargeForAPodLog warns when the bundle would outgrow a
// pod's log before the kubelet rotates it, and not below.
func TestBundleTooLargeForAPodLog(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 4))
	big := make([]byte, 8<<20) // random: gzip keeps its size, base64 adds a third
	for i := range big {
		big[i] = byte(r.Uint32())
	}
	path := filepath.Join(dir, "run.json")
	if err := os.WriteFile(path, big, 0o600); err != nil {
		t.Fatal(err)
	}
	var log, warn strings.Builder
	if err := WriteBundle(&log, &warn, []string{path}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(warn.String(), "rotated at 10 MiB") || log.Len() <= kubeletLogMaxBytes {
		t.Errorf("a %d-byte bundle warned %q", log.Len(), warn.String())
	}
	bundles, err := ReadBundles(strings.NewReader(log.String()))
	if err != nil || !bytes.Equal(contents(t, bundles[0])["run.json"], big) {
		t.Fatalf("the large bundle does not read back: %v", err)
	}
	paths, _ := bundleFiles(t)
	warn.Reset()
	if err := WriteBundle(io.Discard, &warn, paths); err != nil || warn.Len() > 0 {
		t.Errorf("a small bundle warned %q (%v)", warn.String(), err)
	}
}

// TestBundlePassesOverLongLines: a line of another program's output far
// longer than any bundle line (17 MiB, once "bufio.Scanner: token too
// long") before, inside and after a bundle is passed over.
func TestBundlePassesOverLongLines(t *testing.T) {
	paths, want := bundleFiles(t)
	text := writeTestBundle(t, paths)
	long := strings.Repeat("x", 17<<20)
	lines := strings.SplitAfter(text, "\n")
	log := long + "\n" + strings.Join(lines[:3], "") + long + "=== stampede results \n" + strings.Join(lines[3:], "") + long
	bundles, err := ReadBundles(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if len(bundles) != 1 {
		t.Fatalf("%d bundles, want 1", len(bundles))
	}
	checkFiles(t, bundles[0], want)
}

// largeBundle is the bundle of one file of size bytes that compress well
// (a JSON result's repeated rows), and the file's SHA-256.
func largeBundle(t testing.TB, size int) (string, [32]byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	row := []byte(`{"ttft": 0.0123, "itl": [0.001, 0.002, 0.003]},` + "\n")
	h := sha256.New()
	w := io.MultiWriter(f, h)
	for n := 0; n < size; n += len(row) {
		w.Write(row[:min(len(row), size-n)])
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return writeTestBundle(t, []string{path}), sum
}

// TestExtractWritesAsItDecodes: a bundle of a 64 MiB file (a log of a
// few hundred KiB) is written to its file as it is decoded: the extraction
// allocates a small part of the file's size, where holding it whole took
// more than the file.
func TestExtractWritesAsItDecodes(t *testing.T) {
	const size = 64 << 20
	log, sum := largeBundle(t, size)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	bundles, err := ReadBundles(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	written, err := WriteBundleFiles(dir, bundles)
	runtime.ReadMemStats(&after)
	if err != nil || len(written) != 1 {
		t.Fatalf("written %v, %v", written, err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/8 {
		t.Errorf("extracting a %d-byte file from a %d-byte log allocated %d bytes", size, len(log), alloc)
	}
	f, err := os.Open(written[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if n, err := io.Copy(h, f); err != nil || n != size || !bytes.Equal(h.Sum(nil), sum[:]) {
		t.Errorf("the extracted file: %d bytes, %v, its checksum differs: %v", n, err, !bytes.Equal(h.Sum(nil), sum[:]))
	}
}

// BenchmarkExtractLarge extracts a bundle of a 256 MiB file; its
// allocations per op are what extraction holds (go test -bench
// ExtractLarge -benchmem ./bench/cluster/).
func BenchmarkExtractLarge(b *testing.B) {
	log, _ := largeBundle(b, 256<<20)
	dir := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		bundles, err := ReadBundles(strings.NewReader(log))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := WriteBundleFiles(dir, bundles); err != nil {
			b.Fatal(err)
		}
	}
}
