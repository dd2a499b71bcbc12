package engine

import (
	"time"

	"github.com/stampede-bench/stampede/shard"
)

// The client's health as the engine publishes it: the shards' accounts
// are copied out of the transport's own, so that what reads a run's
// health (the outputs, the cluster merge) needs nothing below the engine.

// TLS paths a run can take, as ShardHealth.TLSPath names them.
const (
	// TLSPathLoop: crypto/tls handshakes on goroutines, then the shard
	// loops open and seal the TLS 1.3 records themselves.
	TLSPathLoop = shard.TLSPathLoop
	// TLSPathUserspace: a goroutine per connection, which opens the
	// server's TLS 1.3 records itself.
	TLSPathUserspace = shard.TLSPathUserspace
	// TLSPathCryptoTLS: TLS 1.2 or another suite, read through crypto/tls.
	TLSPathCryptoTLS = shard.TLSPathCryptoTLS
)

// ShardHealth is one shard's account of itself (or the TLS fallback
// transport's, as one entry), read after the run.
type ShardHealth struct {
	// RTTs holds each connection's kernel round-trip times (TCP_INFO),
	// read once when it closed.
	RTTs        []ConnRTT
	CPU         int
	CPUTime     time.Duration // user+system time of the loop's thread
	Preempted   int64         // times another thread took the loop's CPU
	LongestTurn time.Duration // longest pass over one epoll_wait's events
	Waits       int64         // epoll_wait calls that returned events
	Events      int64         // events they returned
	Naps        int64         // pauses to let events accumulate (the loop's coalescing nap)
	Reads       int64         // reads that returned bytes
	// RingReads counts the reads of those done by the shard's io_uring
	// ring; 0 where the kernel offers none.
	RingReads    int64
	StampedReads int64  // of those, reads that carried a kernel timestamp
	Connections  int64  // connections opened
	PinError     string // why pinning failed, if it did
	// Deferred counts reads put off to a later turn: a connection with
	// more to read waits behind the others (a turn's read bound).
	Deferred int64
	// DeadlineLateMax is the longest a request ran past its deadline (or a
	// connect past its timeout) before the loop failed it and closed its
	// connection.
	DeadlineLateMax time.Duration
	// Sent counts requests whose last byte went out; TxStamped those of
	// them timed by the kernel's transmit stamp (the others by the clock
	// right after the write).
	Sent      int64
	TxStamped int64
	// EarlyWrites counts requests written right after connect(2) returned,
	// the handshake already complete (a local server), without waiting for
	// the loop to hear of it.
	EarlyWrites int64
	// Connect trouble. SlowConnects counts handshakes that took longer
	// than a second (the kernel's first SYN retransmission waits that
	// long), SynRetransmits those of them the kernel had to retransmit for (a SYN, or the handshake's ACK, dropped: typically a
	// server whose accept queue overflowed). DroppedBeforeResponse counts
	// connections the server reset or closed before any response byte;
	// Reconnects, connections opened to replace one the server closed.
	SlowConnects          int64
	SynRetransmits        int64
	DroppedBeforeResponse int64
	Reconnects            int64
	// Resent counts requests sent again on a fresh connection because
	// the server closed the kept-alive one they went out on before it
	// read any of them; StoppedReuse says the shard stopped reusing
	// connections, the server having closed them more often than it
	// answered on them.
	Resent       int64
	StoppedReuse bool
	// Warm is what the warm-up did (zero without one).
	Warm WarmStats

	// TLS handshakes: how many, how many resumed a session, and their CPU
	// and elapsed time summed over connections. A shard's CPUTime includes
	// the CPU of its connections' handshakes (run on handshaker threads).
	TLSHandshakes, TLSResumed         int64
	TLSHandshakeCPU, TLSHandshakeTime time.Duration
	// TLSFallbacks counts the connections of a shard's TLS run that
	// negotiated what the loop cannot carry (TLS 1.2) and were read by
	// crypto/tls on a goroutine instead, one request each.
	TLSFallbacks int64
	// TLSPath says how the TLS connections were read (TLSPathLoop,
	// TLSPathUserspace or TLSPathCryptoTLS, with what made the run fall
	// back) and whether the kernel offers kTLS.
	TLSPath string
}

// WarmStats says what a warm-up did.
type WarmStats struct {
	Opened  int           // connections opened and left idle for the run
	Failed  int           // connects that failed or timed out (not retried)
	Slowed  int           // rounds that came back slow and halved the next
	Longest time.Duration // longest handshake
}

// ConnRTT is one connection's TCP_INFO round-trip times in µs: the
// smoothed estimate (tcpi_rtt) and the minimum (tcpi_min_rtt).
type ConnRTT struct{ RTTUs, MinRTTUs uint32 }

// shardHealth publishes h.
func shardHealth(h shard.Health) ShardHealth {
	rtts := make([]ConnRTT, len(h.RTTs))
	for i, r := range h.RTTs {
		rtts[i] = ConnRTT(r)
	}
	return ShardHealth{RTTs: rtts,
		CPU: h.CPU, CPUTime: h.CPUTime, Preempted: h.Preempted, LongestTurn: h.LongestTurn,
		Waits: h.Waits, Events: h.Events, Naps: h.Naps, Reads: h.Reads, RingReads: h.RingReads,
		StampedReads: h.StampedReads, Connections: h.Connections, PinError: h.PinError,
		Deferred: h.Deferred, DeadlineLateMax: h.DeadlineLateMax,
		Sent: h.Sent, TxStamped: h.TxStamped, EarlyWrites: h.EarlyWrites,
		SlowConnects: h.SlowConnects, SynRetransmits: h.SynRetransmits,
		DroppedBeforeResponse: h.DroppedBeforeResponse, Reconnects: h.Reconnects,
		Resent: h.Resent, StoppedReuse: h.StoppedReuse,
		Warm:          WarmStats(h.Warm),
		TLSHandshakes: h.TLSHandshakes, TLSResumed: h.TLSResumed,
		TLSHandshakeCPU: h.TLSHandshakeCPU, TLSHandshakeTime: h.TLSHandshakeTime,
		TLSFallbacks: h.TLSFallbacks, TLSPath: h.TLSPath,
	}
}

// publish is shardHealth of each of hs.
func publish(hs []shard.Health) []ShardHealth {
	out := make([]ShardHealth, len(hs))
	for i, h := range hs {
		out[i] = shardHealth(h)
	}
	return out
}
