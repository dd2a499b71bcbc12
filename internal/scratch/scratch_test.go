package scratch

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCreateUnlinked(t *testing.T) {
	dir := t.TempDir()
	f, err := CreateUnlinked(dir, "x-*")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if names, _ := os.ReadDir(dir); len(names) != 0 {
		t.Errorf("%d names left in the directory, want the file unlinked", len(names))
	}
	if _, err := f.WriteString("held"); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	if _, err := f.ReadAt(b, 0); err != nil || string(b) != "held" {
		t.Errorf("read back %q, %v", b, err)
	}
	if _, err := CreateUnlinked(filepath.Join(dir, "none"), "x-*"); err == nil {
		t.Error("a missing directory gave a file")
	}
}

func TestFreeBytes(t *testing.T) {
	free, err := FreeBytes(t.TempDir())
	if err != nil || free <= 0 {
		t.Errorf("FreeBytes = %d, %v; want the disk's free space", free, err)
	}
	missing := filepath.Join(t.TempDir(), "none")
	if _, err := FreeBytes(missing); err == nil || !os.IsNotExist(err) {
		t.Errorf("FreeBytes of a missing directory: %v, want not-exist", err)
	}
}
