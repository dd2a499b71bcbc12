package mock

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// wakeup is how the token writer sleeps: on a timerfd armed at the next due
// time, read through Go's netpoller. A timerfd has nanosecond resolution,
// where Go's own timers are rounded to the millisecond by the netpoller's
// epoll timeout; and parking in the netpoller (rather than blocking a
// thread in epoll_wait) lets the runtime run the writer as soon as the
// timer fires, without waiting for sysmon to move a P around. New work is
// signalled by arming the same timer to fire at once.
type wakeup struct {
	fd    int
	timer *os.File
}

func newWakeup() (*wakeup, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timerfd_create: %w", err)
	}
	return &wakeup{fd: fd, timer: os.NewFile(uintptr(fd), "timerfd")}, nil
}

// notify wakes the sleeper now; any goroutine may call it.
func (w *wakeup) notify() { w.arm(1) }

// arm sets the timer to fire at the absolute CLOCK_MONOTONIC time dueNs (a
// time already past fires at once); 0 disarms it.
func (w *wakeup) arm(dueNs int64) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(dueNs)}
	_ = unix.TimerfdSettime(w.fd, unix.TFD_TIMER_ABSTIME, &spec, nil)
}

// wait parks until the timer fires, and consumes the expiry.
func (w *wakeup) wait() {
	var expirations [8]byte
	_, _ = w.timer.Read(expirations[:])
}

func (w *wakeup) close() { _ = w.timer.Close() }
