package shard

import (
	"time"

	"golang.org/x/sys/unix"
)

// Warm-up (--warm-connections): before the clock starts, a shard opens
// keep-alive connections for the requests to come, so that their TTFT
// holds no connect, as a long-running client's would. It opens them in
// rounds and waits for each round's handshakes before the next, so at most
// one round's SYNs are outstanding. A round is doubled while the
// handshakes come back fast, and halved, after a pause, when one was slow
// or needed a retransmission: that is what a server whose accept queue
// overflowed (or a lossy network) looks like from the client. Over TLS a
// round waits for its connections' handshakes as well (the handshakers run
// them as for a request's connection), so that TTFT holds neither; a
// handshake's time does not make a round slow.

const (
	// warmFirstRound and warmMaxRound bound the connections one round
	// opens.
	warmFirstRound = 16
	warmMaxRound   = 256
	// warmSlow is the handshake time that halves the next round.
	warmSlow = 100 * time.Millisecond
)

// WarmStats says what a shard's warm-up did.
type WarmStats struct {
	Opened  int           // connections opened and left idle for the run
	Failed  int           // connects that failed or timed out (not retried)
	Slowed  int           // rounds that came back slow and halved the next
	Longest time.Duration // longest handshake
}

// warm opens up to n idle connections (see above). It gives up early on
// an abort, or once a round has failed entirely: the run then opens the
// rest itself.
func (s *Shard) warm(n int) {
	if s.cfg.TLS != nil {
		handshakers.hold()
		defer handshakers.release()
	}
	round := warmFirstRound
	for s.health.Warm.Opened < n && !s.aborting.Load() && !s.stopping.Load() {
		k := min(round, n-s.health.Warm.Opened)
		opened, slow, ok := s.warmRound(k)
		s.health.Warm.Opened += opened
		if !ok || opened == 0 {
			return
		}
		switch {
		case slow:
			s.health.Warm.Slowed++
			round = max(1, round/2)
			nap(warmSlow)
		default:
			round = min(warmMaxRound, round*2)
		}
	}
}

// warmRound opens k connections and waits for their handshakes (up to the
// connect timeout). It returns how many it left idle, whether any was
// slow or retransmitted, and false when a connect failed.
func (s *Shard) warmRound(k int) (opened int, slow, ok bool) {
	ok = true
	startNs := s.cfg.Clock.Now()
	pending := 0
	tls := s.cfg.TLS != nil
	s.warmTook, s.warmOpened, s.warmFailed = 0, 0, false
	for range k {
		// Warm connections go round-robin over the destinations.
		c, err := s.open(s.warmDest)
		s.warmDest = (s.warmDest + 1) % len(s.sas)
		if err != nil {
			s.health.Warm.Failed++
			return opened, slow, false
		}
		if tls {
			s.newDial(c)
		}
		switch {
		case c.state != connBusy:
		case tls:
			s.submitHandshake(c)
		default:
			s.putIdle(c)
			opened++
			continue
		}
		pending++
	}
	deadlineNs := startNs + int64(s.cfg.ConnectTimeout)
	for pending > 0 {
		waitMs := int((deadlineNs - s.cfg.Clock.Now() + int64(time.Millisecond) - 1) / int64(time.Millisecond))
		if waitMs <= 0 || s.aborting.Load() {
			break
		}
		events, err := s.poll.wait(waitMs)
		if err != nil {
			break
		}
		now := s.cfg.Clock.Now()
		for i := range events {
			ev := &events[i]
			if int(ev.Fd) == s.wake.fd {
				s.wake.drain()
				continue
			}
			c := s.conn(int(ev.Fd))
			if c == nil || c.tag != eventTag(ev) {
				continue
			}
			if c.state == connHandshaking {
				if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
					s.feedHandshake(c)
				}
				continue
			}
			if c.state != connConnecting || ev.Events&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) == 0 {
				continue
			}
			if ev.Events&(unix.EPOLLERR|unix.EPOLLHUP) != 0 && connectResult(c.fd) != nil {
				pending--
				s.health.Warm.Failed++
				s.closeConn(c)
				ok = false
				continue
			}
			took := time.Duration(now - startNs)
			s.health.Warm.Longest = max(s.health.Warm.Longest, took)
			if took > warmSlow || handshakeRetransmits(c.fd) > 0 {
				slow = true
			}
			if tls {
				s.submitHandshake(c)
				continue
			}
			pending--
			s.putIdle(c)
			opened++
		}
		if tls {
			took := s.warmTook
			s.takeHandshakes()
			pending -= s.warmTook - took
		}
	}
	opened += s.warmOpened
	ok = ok && !s.warmFailed
	// Connects and handshakes that did not complete in time are closed.
	for _, c := range s.conns {
		if c != nil && (c.state == connConnecting || c.state == connHandshaking) {
			s.health.Warm.Failed++
			s.closeConn(c)
			ok = false
		}
	}
	return opened, slow, ok
}
