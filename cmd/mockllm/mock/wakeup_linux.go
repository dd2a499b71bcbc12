package mock

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// wakeup is how the token writer sleeps: in a blocking read(2) of a
// timerfd armed at the next due time. A timerfd has nanosecond resolution,
// where Go's own timers are rounded to the millisecond by the netpoller's
// epoll timeout. New work is signalled by arming the same timer to fire at
// once.
//
// The read blocks the writer's thread, which keeps its P while it sleeps
// (the runtime takes a P back from a system call only after 10 ms when
// other Ps are idle, and the server runs with a P to spare). That is
// cheaper than parking in the netpoller: there, every wake-up first runs
// the scheduler on another thread, and each time every P has gone idle
// sysmon falls into its deep sleep, to be woken by the writer's next
// write(2) and then poll every 20 µs while the writer works.
//
// Arming costs a system call and, on a virtual machine, an exit to the
// hypervisor to reprogram the CPU's timer, so the writer arms as seldom as
// it can: a periodic timer (armEvery) is re-armed by the kernel on each
// read while tokens are dense.
type wakeup struct {
	fd int
}

func newWakeup() (*wakeup, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timerfd_create: %w", err)
	}
	return &wakeup{fd: fd}, nil
}

// notify wakes the sleeper now; any goroutine may call it.
func (w *wakeup) notify() { w.arm(1) }

// arm sets the timer to fire at the absolute CLOCK_MONOTONIC time dueNs (a
// time already past fires at once); 0 disarms it.
func (w *wakeup) arm(dueNs int64) { w.armEvery(dueNs, 0) }

// armEvery sets the timer to fire at the absolute CLOCK_MONOTONIC time
// firstNs and every periodNs after it (0: only once).
func (w *wakeup) armEvery(firstNs, periodNs int64) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(firstNs)}
	if periodNs > 0 {
		spec.Interval = unix.NsecToTimespec(periodNs)
	}
	_ = unix.TimerfdSettime(w.fd, unix.TFD_TIMER_ABSTIME, &spec, nil)
}

// wait blocks until the timer fires, and consumes the expiry.
func (w *wakeup) wait() {
	var expirations [8]byte
	for {
		if _, err := unix.Read(w.fd, expirations[:]); err != unix.EINTR {
			return
		}
	}
}

// close releases the timer; nobody may be waiting on it.
func (w *wakeup) close() { _ = unix.Close(w.fd) }
