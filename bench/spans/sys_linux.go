package spans

import "golang.org/x/sys/unix"

// lowerThreadPriority gives the calling thread the lowest priority an
// unprivileged thread may take (nice 19): on a CPU a shard's thread shares
// with it, the kernel runs the shard first whenever it wakes. On Linux
// the nice value of a thread id is that thread's alone. The caller has
// locked its goroutine to the thread and never unlocks it, so the thread
// ends with the goroutine and no other goroutine inherits its priority.
func lowerThreadPriority() {
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 19)
}

// openFilesLimit is the process's soft limit of open files.
func openFilesLimit() uint64 {
	var l unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &l); err != nil {
		return 0
	}
	return l.Cur
}
