package mock

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// setFIFOPriority makes the calling thread SCHED_FIFO at priority; the
// caller has locked its goroutine to the thread.
func setFIFOPriority(priority int) error {
	attr := unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: uint32(priority)}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		return fmt.Errorf("--writer-fifo-priority %d: sched_setattr(SCHED_FIFO): %w (it needs CAP_SYS_NICE, or an RLIMIT_RTPRIO of %d or more)", priority, err, priority)
	}
	return nil
}
