package report

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/metrics"
)

// The health line: stampede's view of its own accuracy, on stderr after
// Python's block.

// WriteHealth prints stampede's view of its own accuracy (DESIGN
// principle 6) on one line, after the block so the block stays Python's.
// spans is --otlp-receiver's join, nil without it: the receiver runs in
// the client's process, so its CPU and memory are the client's cost too.
func WriteHealth(w io.Writer, res *engine.Result, spans *ServerSpans) {
	h := res.Health
	var cpu, hsCPU, hsTime time.Duration
	var handshakes, resumed, fellBack, own, redone int64
	var path, ownWhy string
	for _, s := range h.Shards {
		path = cmp.Or(path, s.TLSPath)
		own += s.TLSOwn
		redone += s.TLSOwnRedone
		ownWhy = cmp.Or(ownWhy, s.TLSOwnWhy)
		cpu += s.CPUTime
		hsCPU += s.TLSHandshakeCPU
		hsTime += s.TLSHandshakeTime
		handshakes += s.TLSHandshakes
		resumed += s.TLSResumed
		fellBack += s.TLSFallbacks
	}
	late := ""
	if handshakes > 0 {
		n := time.Duration(handshakes)
		late = fmt.Sprintf(", TLS handshakes %d (%d resumed; %d the loops' own, %d through crypto/tls%s) took %.2f s of the CPU, %s CPU and %s each on average, TLS path: %s",
			handshakes, resumed, own, handshakes-own, ownClause(redone, ownWhy), hsCPU.Seconds(), durationText(hsCPU/n), durationText(hsTime/n), path)
		if fellBack > 0 {
			late += fmt.Sprintf(" (%d connections not on TLS 1.3 fell back to crypto/tls reads on goroutines)", fellBack)
		}
	}
	if h.DeadlineLateMax > 0 {
		late += fmt.Sprintf(", timed-out requests closed at most %s after their deadline", durationText(h.DeadlineLateMax))
	}
	tx := ""
	if h.Sent > 0 {
		tx = fmt.Sprintf(", kernel TX stamps on %.1f%% of requests", 100*share(h.TxStamped, h.Sent))
	}
	shared := ""
	if h.SharedStamps > 0 {
		shared = fmt.Sprintf(", %d token events (%.1f%%) shared a read with the event before (their ITL of 0 is not a measurement)",
			h.SharedStamps, 100*share(h.SharedStamps, h.TokenEvents))
	}
	late += spanReceiverCost(spans)
	late += memoryClause(h.Memory, h.Log)
	if behind := behindSchedule(h); behind != "" {
		late += "; " + behind
	}
	if trouble := connectTrouble(h); trouble != "" {
		late += "; " + trouble
	}
	late += requestStoreTrouble(h)
	fmt.Fprintf(w, "stampede: %d shards, client CPU %.2f s, longest loop turn %s, schedule lag p50 %s p99 %s max %s, kernel RX stamps on %.1f%% of reads%s%s%s\n",
		res.Shards, cpu.Seconds(), durationText(h.LongestTurn), durationText(h.ScheduleLagP50), durationText(h.ScheduleLagP99),
		durationText(h.ScheduleLagMax), 100*h.KernelStampCoverage, tx, shared, late)
}

// requestStoreTrouble says when requests waited for their bytes from the
// request store (engine.WindowStats.Late) or the store failed; "" when
// neither happened.
func requestStoreTrouble(h engine.Health) string {
	out := ""
	if w := h.Window; w.Late > 0 {
		out = fmt.Sprintf("; %d requests were due before their bytes were read back from the request store (the longest waited %s): "+
			"that wait is schedule lag, counted in their queue time", w.Late, durationText(w.LateMax))
	}
	if h.StoreErr != nil {
		out += fmt.Sprintf("; the run stopped sending: %v", h.StoreErr)
	}
	return out
}

// ownClause says why TLS handshakes went through crypto/tls rather than
// the loops' own resumption: attempts the server did not take (redone
// through crypto/tls), or why the loops did none of their own.
func ownClause(redone int64, why string) string {
	switch {
	case redone > 0:
		return fmt.Sprintf(", %d own attempts redone through crypto/tls: %s", redone, why)
	case why != "":
		return ": " + why
	}
	return ""
}

// spanReceiverCost is the health line's clause of the span receiver's
// busy time per span and the memory its kept spans held (", span
// receiver 1.3 µs/span, 1.9 MB"); "" without --otlp-receiver.
func spanReceiverCost(s *ServerSpans) string {
	if s == nil {
		return ""
	}
	rc := s.Receiver
	open := ""
	if rc.Unprotected {
		open = fmt.Sprintf(", listening beyond loopback (%s) without --otlp-receiver-token: any host that reaches it may send spans", rc.Address)
	}
	if rc.Spans == 0 {
		busy := ""
		if rc.BusyS > 0 { // refusing exports that held no request span
			busy = " (busy " + durationText(time.Duration(rc.BusyS*1e9)) + ")"
		}
		return fmt.Sprintf(", span receiver got no spans%s, %s%s", busy, bytesText(rc.HeldBytes), open)
	}
	return fmt.Sprintf(", span receiver %s/span, %s%s", durationText(time.Duration(rc.BusyPerSpanUs*1e3)), bytesText(rc.HeldBytes), open)
}

// bytesText is a size as the health line prints it: two or three
// significant digits in kB or MB ("31 kB", "1.9 MB", "123 MB").
func bytesText(n int64) string {
	switch {
	case n < 1e3:
		return fmt.Sprintf("%d B", n)
	case n < 999_500:
		return fmt.Sprintf("%.0f kB", float64(n)/1e3)
	case n < 9_950_000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.0f MB", float64(n)/1e6)
}

// ScheduleLagBehind is the schedule lag p99 past which the health line
// says in words that the client fell behind its arrival schedule. A
// fixed 10 ms, not a share of the gap between arrivals: at an infinite
// rate every arrival is due at once and there is no gap, and 10 ms is
// well above what a client that keeps up shows (tens of µs on an idle
// host) while still small beside the TTFTs a load test measures.
const ScheduleLagBehind = 10 * time.Millisecond

// behindSchedule says, for the health line, that 1 % or more of the
// requests went out ScheduleLagBehind or more after they were due; ""
// when the client kept up.
func behindSchedule(h engine.Health) string {
	if h.ScheduleLagP99 < ScheduleLagBehind {
		return ""
	}
	return fmt.Sprintf("the client fell behind its schedule: 1%% of requests went out %s or more late (at worst %s), "+
		"so the load offered was below the one asked for (a busy or too small client host)",
		durationText(h.ScheduleLagP99), durationText(h.ScheduleLagMax))
}

// durationText is a duration as the health line prints it: three
// significant digits at most, with a unit and a space before it ("4.4
// ms", "567 µs", "1.25 s").
func durationText(d time.Duration) string {
	switch {
	case d < 950*time.Nanosecond:
		return fmt.Sprintf("%d ns", d.Nanoseconds())
	case d < 9950*time.Nanosecond:
		return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
	case d < 999500*time.Nanosecond:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	case d < 999950*time.Microsecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}

// connectTrouble names, for the health line, what went wrong opening and
// keeping connections, with its likely cause and remedy; "" when nothing
// did.
func connectTrouble(h engine.Health) string {
	var parts []string
	if h.SlowConnects > 0 {
		cause := "the network or the server's accept queue is slow"
		if h.SynRetransmits > 0 {
			cause = fmt.Sprintf("%d needed a retransmitted handshake: the server's accept queue (somaxconn) overflowed or the network dropped packets", h.SynRetransmits)
		}
		parts = append(parts, fmt.Sprintf("%d connections took > 1 s to open (%s); their TTFT holds that wait: "+
			"use --ramp-up-strategy or --warm-connections, or raise the server's listen backlog", h.SlowConnects, cause))
	}
	if h.TLSHandshakeTimeouts > 0 {
		parts = append(parts, fmt.Sprintf("%d TLS handshakes timed out (not done within --connect-timeout-sec of the connect's start: "+
			"a server that took the ClientHello and did not finish its answer); each failed its request as a connect failure", h.TLSHandshakeTimeouts))
	}
	if h.DroppedBeforeResponse > 0 {
		parts = append(parts, fmt.Sprintf("%d connections were reset or closed by the server before any response byte "+
			"(a connection limit, an overloaded server, or a keep-alive timeout racing a request)", h.DroppedBeforeResponse))
	}
	if h.Reconnects > 0 {
		parts = append(parts, fmt.Sprintf("%d reconnects after the server closed a connection (each adds a connect to a TTFT)", h.Reconnects))
	}
	if h.Resent > 0 {
		parts = append(parts, fmt.Sprintf("%d requests re-sent on a fresh connection after the server closed a kept-alive one before reading them "+
			"(their TTFT counts from the first send)", h.Resent))
	}
	if h.StoppedReuse > 0 {
		held := ""
		if h.FreshBeforeReuse > 0 {
			held = fmt.Sprintf("; %d of them before the first close, as the server's Keep-Alive header held reuse back", h.FreshBeforeReuse)
		}
		parts = append(parts, "the server closed or reset kept-alive connections more often than it answered on them, "+
			"so connections were not reused (each request opened its own"+held+")")
	}
	return strings.Join(parts, "; ")
}

// shownServerMessages is how many distinct texts the health output names.
const shownServerMessages = 3

// WriteServerMessages names the error messages the server sent inside 200
// streams, the most frequent first: Python's results only say that such
// requests never received a token.
func WriteServerMessages(w io.Writer, m *metrics.ServerMessages) {
	if m.Total() == 0 {
		return
	}
	top, rest := m.Top(shownServerMessages)
	var b strings.Builder
	fmt.Fprintf(&b, "stampede: the server sent %d error message(s) inside 200 streams:", m.Total())
	for i, mc := range top {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %d× %q", mc.Count, mc.Text)
	}
	if rest > 0 {
		fmt.Fprintf(&b, ", %d other(s)", rest)
	}
	fmt.Fprintln(w, b.String())
}

// memoryClause says where the run's peak resident set went: the base
// before any stream opened, the prompt window, the record log (held in
// memory, and how much it wrote to disk) and the streams with the
// collector's slack; "" where the resident set was not sampled.
func memoryClause(m engine.MemorySamples, l engine.LogHealth) string {
	if m.Samples == 0 {
		return ""
	}
	mb := func(b int64) string { return fmt.Sprintf("%.0f MB", float64(b)/1e6) }
	out := fmt.Sprintf(", peak RSS %s: %s base, %s prompts in the window, %s record log, %s streams and the rest",
		mb(m.PeakRSS), mb(m.BaseRSS), mb(m.WindowAtPeak), mb(m.LogAtPeak), mb(m.StreamsAtPeak()))
	if l.DiskBytes > 0 {
		out += fmt.Sprintf(" (record log on disk %s)", mb(l.DiskBytes))
	}
	return out
}
