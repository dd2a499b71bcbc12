//go:build linux

package tokenizer

import (
	"os"
	"syscall"
)

// mapFile maps a cache file read-only. The mapping is private to the
// process and outside the Go heap; a cache file is only ever replaced by a
// rename, never rewritten, so the pages never change under it.
func mapFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() == 0 || st.Size() > 1<<31 {
		return nil, os.ErrInvalid
	}
	return syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_PRIVATE)
}

// unmapFile releases a mapping nothing refers to.
func unmapFile(data []byte) { _ = syscall.Munmap(data) }

// mappable: the cache is mapped, not read.
const mappable = true

// dropPages gives back a mapping's resident pages; they are read back from
// the page cache when next used.
func dropPages(data []byte) { _ = syscall.Madvise(data, syscall.MADV_DONTNEED) }
