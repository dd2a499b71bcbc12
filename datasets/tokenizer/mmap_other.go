//go:build !linux

package tokenizer

import "os"

// mapFile reads a cache file where there is no mmap.
func mapFile(path string) ([]byte, error) { return os.ReadFile(path) }

func unmapFile([]byte) {}

const mappable = false

func dropPages([]byte) {}
