package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/metrics"
)

// figures is everything clusterbench reports of one run.
type figures struct {
	matched
	steps             []stepSpread
	mockCPUSeconds    float64 // the mocks' CPU time, 0 if not given
	agents            []report.SidecarAgent
	resultRequests    int
	completed, failed int
	truthRequests     int
}

// lateUs is the token error the table counts beyond.
const lateUs = 1000

// quantiles sorts xs and returns its nearest-rank p-quantiles
// (metrics.NearestRank); NaN for an empty xs, which the table prints as
// such rather than as a measured 0.
func quantiles(xs []float64, ps ...float64) []float64 {
	slices.Sort(xs)
	out := make([]float64, len(ps))
	for k, p := range ps {
		out[k] = math.NaN()
		if len(xs) > 0 {
			out[k] = metrics.NearestRank(xs, p)
		}
	}
	return out
}

func absAll(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Abs(x)
	}
	return out
}

// beyond counts the errors whose size exceeds limitUs.
func beyond(xs []float64, limitUs float64) int {
	n := 0
	for _, x := range xs {
		if math.Abs(x) > limitUs {
			n++
		}
	}
	return n
}

// cpuPerEventUs is the agents' shard CPU time over their token events, µs.
func (f *figures) cpuPerEventUs() (float64, int64) {
	var cpu float64
	var events int64
	for _, a := range f.agents {
		cpu += a.Health.ClientCPUSeconds
		events += a.Health.TokenEvents
	}
	if events == 0 {
		return math.NaN(), 0
	}
	return cpu * 1e6 / float64(events), events
}

func (f *figures) tokenWrites() int {
	n := 0
	for _, s := range f.steps {
		n += s.tokens
	}
	return n
}

func (f *figures) stepMax() (spreadNs, lateNs int64) {
	for _, s := range f.steps {
		spreadNs, lateNs = max(spreadNs, s.spreadMaxNs), max(lateNs, s.lateMaxNs)
	}
	return spreadNs, lateNs
}

func (f *figures) print(w io.Writer) {
	fmt.Fprintf(w, "requests: %d in the result (%d completed, %d failed), %d in the truth logs, %d matched, %d with another token count\n",
		f.resultRequests, f.completed, f.failed, f.truthRequests, f.requests, f.mismatched)
	if n := len(f.tokenErrUs); n > 0 {
		q := quantiles(f.tokenErrUs, 0.5, 0.99, 0.999, 1)
		fmt.Fprintf(w, "token error (client stamp − truth stamp, µs) over %d tokens: p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f  min %.1f; beyond 1 ms: %d (%d read with the next token, stamped at its arrival; %d whose mock wrote nothing else until the client's stamp: it stalled between its stamp and the write)\n",
			n, q[0], q[1], q[2], q[3], f.tokenErrUs[0], beyond(f.tokenErrUs, lateUs), f.lateShared, f.lateMockStall)
		a := quantiles(absAll(f.itlErrUs), 0.5, 0.99, 0.999, 1)
		fmt.Fprintf(w, "ITL error |client gap − server gap| (µs) over %d gaps: p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n",
			len(f.itlErrUs), a[0], a[1], a[2], a[3])
		t := quantiles(f.ttftErrUs, 0.5, 0.99, 1)
		fmt.Fprintf(w, "TTFT error (the first token's stamp − its write, µs) over %d requests: p50 %.1f  p99 %.1f  max %.1f  min %.1f\n",
			len(f.ttftErrUs), t[0], t[1], t[2], f.ttftErrUs[0])
		s := quantiles(f.startToArrivalUs, 0.5, 0.99, 1)
		fmt.Fprintf(w, "client start stamp to the request's arrival at the mock (connect and send, µs): p50 %.1f  p99 %.1f  max %.1f  min %.1f\n",
			s[0], s[1], s[2], f.startToArrivalUs[0])
	}
	for _, s := range f.steps {
		fmt.Fprintf(w, "mock %s: %d decode steps, %d token writes (at most %d in a step); step spread max %v, last write late max %v\n",
			s.path, s.steps, s.tokens, s.tokensMax, time.Duration(s.spreadMaxNs), time.Duration(s.lateMaxNs))
	}
	if writes := f.tokenWrites(); f.mockCPUSeconds > 0 && writes > 0 {
		fmt.Fprintf(w, "mock CPU per token write (the mocks' CPU ÷ %d writes, setup included): %.2f µs\n", writes, f.mockCPUSeconds*1e6/float64(writes))
	}
	if us, events := f.cpuPerEventUs(); events > 0 {
		fmt.Fprintf(w, "client CPU per token event (agents' shard CPU ÷ %d events): %.2f µs\n", events, us)
	}
	for _, a := range f.agents {
		c := a.Clock
		fmt.Fprintf(w, "agent %d: %d requests, clock offset %v ± %v (min RTT %v over %d probes), schedule started %v after the announced start\n",
			a.Index, a.Requests, time.Duration(c.OffsetNs), time.Duration(c.ErrorBoundNs), time.Duration(c.MinRTTNs), c.Probes, time.Duration(c.StartLateNs))
	}
}

// tableHeader is docs/scale.md's table head; row prints one row of it.
const tableHeader = "| streams | agents | mocks | tok/s per stream | TTFT error p50 / p99 (µs) | token error p50 / p99 / p99.9 / max (µs) | tokens > 1 ms | ITL error p99 (µs) | client CPU per token event (µs) | client RSS per open stream, over the base / over the held run (KiB) | client RSS per request of the run (KiB) | mock step spread max (ms) | mock CPU per token write (µs) |\n" +
	"|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"

func (f *figures) row(streams, mocks int, tokPerSec float64, mem rssSplit) string {
	tok := quantiles(f.tokenErrUs, 0.5, 0.99, 0.999, 1)
	ttft := quantiles(f.ttftErrUs, 0.5, 0.99)
	itl := quantiles(absAll(f.itlErrUs), 0.99)
	cpu, _ := f.cpuPerEventUs()
	perStream, perRequest := mem.split()
	spread, _ := f.stepMax()
	mockCPU := "–"
	if writes := f.tokenWrites(); f.mockCPUSeconds > 0 && writes > 0 {
		mockCPU = fmt.Sprintf("%.2f", f.mockCPUSeconds*1e6/float64(writes))
	}
	cells := []string{
		fmt.Sprint(streams), fmt.Sprint(len(f.agents)), fmt.Sprint(mocks), fmt.Sprintf("%g", tokPerSec),
		fmt.Sprintf("%.0f / %.0f", ttft[0], ttft[1]),
		fmt.Sprintf("%.1f / %.1f / %.1f / %.1f", tok[0], tok[1], tok[2], tok[3]),
		fmt.Sprintf("%d of %d (%d shared a read, %d mock stalls)", beyond(f.tokenErrUs, lateUs), len(f.tokenErrUs), f.lateShared, f.lateMockStall),
		fmt.Sprintf("%.1f", itl[0]),
		fmt.Sprintf("%.2f", cpu), perStream, perRequest,
		fmt.Sprintf("%.1f", float64(spread)/1e6), mockCPU,
	}
	return "| " + strings.Join(cells, " | ") + " |"
}

// rssSplit is what a row's agents' RSS is made of, from each agent's own
// memory (the sidecar's health.agents). Per open stream is measured while
// the streams are open: each agent samples its resident set with the
// streams open at that instant and keeps the sample with the most open
// (report.SidecarMemory); the row's agents' RSS at that sample, less an
// agent's base at its own (an agent running one request: baseOpenBytes)
// for each, over their streams open then. That base holds none of the
// run's requests, which every agent builds, so the figure counts them
// too; the second, over the held run, is the agents' RSS at their most
// open sample less the held run's at its own, over the streams open in
// the first and not in the second: the same requests, few streams open,
// the streams' own. Per request of the run comes
// from the peaks (VmHWM, read once an agent's share ran and its partial's
// records were built, before their encoding and agent 0's merge): the
// same agents ran the same requests again with few streams open at a
// time (held), and that run's peaks less the base's (basePeakBytes) for
// each agent, over the requests, are the requests every agent builds (the
// run's digest is the whole run's), its results, its partial's records.
type rssSplit struct {
	run, held []report.SidecarAgentMemory
	// basePeakBytes and baseOpenBytes are the base agents' mean peak and
	// mean RSS at their most open sample; baseOpenKnown is false when a
	// base agent had no samples.
	basePeakBytes, baseOpenBytes int64
	baseOpenKnown                bool
}

// split formats the two figures, KiB; "–" for one not measured.
func (m rssSplit) split() (perStream, perRequest string) {
	perStream, perRequest = "–", "–"
	kib := func(bytes, n int64) string { return fmt.Sprintf("%.2f", float64(bytes)/1024/float64(n)) }
	var requests, atMostOpen, open int64
	sampled := m.baseOpenKnown
	for _, a := range m.run {
		requests += int64(a.Requests)
		if a.Sampled == nil {
			sampled = false
			continue
		}
		atMostOpen += a.Sampled.RSSAtMostOpenBytes - m.baseOpenBytes
		open += int64(a.Sampled.MostOpenStreams)
	}
	if len(m.run) == 0 || requests == 0 {
		return perStream, perRequest
	}
	if sampled && open > 0 {
		perStream = kib(atMostOpen, open)
	}
	if len(m.held) != len(m.run) {
		return perStream, perRequest
	}
	var heldPeaks, overHeld, openOverHeld int64
	heldSampled := true
	for i, h := range m.held {
		heldPeaks += h.PeakRSSBytes - m.basePeakBytes
		if a := m.run[i]; a.Sampled == nil || h.Sampled == nil {
			heldSampled = false
		} else {
			overHeld += a.Sampled.RSSAtMostOpenBytes - h.Sampled.RSSAtMostOpenBytes
			openOverHeld += int64(a.Sampled.MostOpenStreams - h.Sampled.MostOpenStreams)
		}
	}
	if heldSampled && openOverHeld > 0 {
		perStream += " / " + kib(overHeld, openOverHeld)
	}
	return perStream, kib(heldPeaks, requests)
}
