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
func WriteHealth(w io.Writer, res *engine.Result) {
	h := res.Health
	var cpu, hsCPU, hsTime time.Duration
	var handshakes, resumed, fellBack int64
	var path string
	for _, s := range h.Shards {
		path = cmp.Or(path, s.TLSPath)
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
		late = fmt.Sprintf(", TLS handshakes %d (%d resumed) took %.2fs of the CPU, %s CPU and %s each on average, TLS path: %s",
			handshakes, resumed, hsCPU.Seconds(), (hsCPU / n).Round(time.Microsecond), (hsTime / n).Round(time.Microsecond), path)
		if fellBack > 0 {
			late += fmt.Sprintf(" (%d connections not on TLS 1.3 fell back to crypto/tls reads on goroutines)", fellBack)
		}
	}
	if h.DeadlineLateMax > 0 {
		late += fmt.Sprintf(", timed-out requests closed at most %s after their deadline", h.DeadlineLateMax)
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
	if trouble := connectTrouble(h); trouble != "" {
		late += "; " + trouble
	}
	fmt.Fprintf(w, "stampede: %d shards, client CPU %.2fs, longest loop turn %s, schedule lag p50 %s p99 %s max %s, kernel RX stamps on %.1f%% of reads%s%s%s\n",
		res.Shards, cpu.Seconds(), h.LongestTurn, h.ScheduleLagP50, h.ScheduleLagP99, h.ScheduleLagMax, 100*h.KernelStampCoverage, tx, shared, late)
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
		parts = append(parts, "the server closed kept-alive connections more often than it answered on them, "+
			"so connections were not reused (each request opened its own)")
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
