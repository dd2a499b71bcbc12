// Package scratch is the disk a run spills to: files that live only while
// they are open, and the space left for them.
package scratch

import (
	"os"
	"syscall"
)

// CreateUnlinked creates a file in dir (os.TempDir() when "") named after
// pattern as os.CreateTemp names it, and unlinks it at once: it lives
// while it is open and goes with the process, however that ends.
func CreateUnlinked(dir, pattern string) (*os.File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// FreeBytes is the space an unprivileged process may still write in dir
// (os.TempDir() when ""); a dir that does not exist is an error naming it.
func FreeBytes(dir string) (int64, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	if _, err := os.Stat(dir); err != nil {
		return 0, err
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, &os.PathError{Op: "statfs", Path: dir, Err: err}
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
