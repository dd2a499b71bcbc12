//go:build !linux

package spans

// lowerThreadPriority leaves the thread as it is off Linux.
func lowerThreadPriority() {}

// openFilesLimit is unknown off Linux.
func openFilesLimit() uint64 { return 0 }
