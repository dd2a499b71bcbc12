package pyouttest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RunPyRef runs dir/pyref.py, which checks the golden files in dir against
// its own Python computation and exits non-zero on a difference.
func RunPyRef(t testing.TB, dir string) {
	t.Helper()
	cmd := exec.Command(Python3(t), "pyref.py")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s: %v\n%s", filepath.Join(dir, "pyref.py"), err, out)
	}
}

// Python3 is the path of the python3 interpreter; the test is skipped
// where there is none.
func Python3(t testing.TB) string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	return python
}

// CompareGolden checks data against the golden file at path, or, with
// update (a test's -update flag), writes it there.
func CompareGolden(t testing.TB, path string, data []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(data, want) {
		t.Errorf("%s differs from the golden file:\n got: %q\nwant: %q", path, data, want)
	}
}
