package metrics

import (
	"cmp"
	"errors"
	"math"
	"slices"
)

// MaxReportedFailures is how many failed requests' errors are listed
// before the result block (Python's "capping to 10").
const MaxReportedFailures = 10

// ComputeOptions selects what Compute derives, mirroring the arguments Python's
// calculate_metrics / calculate_metrics_for_embeddings receive.
type ComputeOptions struct {
	// Pooling selects calculate_metrics_for_embeddings (pooling backends).
	Pooling bool
	// Percentiles are the --metric-percentiles values, each in [0, 100].
	Percentiles []float64
	// Goodput holds the --goodput SLOs in milliseconds (see ParseGoodput);
	// nil or empty means no goodput.
	Goodput map[string]float64
	// CountTokens counts the tokens of a generated text (the tokenizer,
	// without special tokens). It is used for a successful request whose
	// server sent no usage.completion_tokens; nil means no tokenizer, and
	// such a request counts as 1 output token, as in Python.
	CountTokens func(text string) int
	// ClientQueue adds the client-side queue time statistics; Python
	// computes them when --max-concurrency is set.
	ClientQueue bool
	// QueueInclusiveE2EL adds latency + queue time statistics; Python
	// computes them when --max-concurrency is set and --request-rate is
	// finite.
	QueueInclusiveE2EL bool
	// InputAudioSeconds, when not nil, holds each request's input audio
	// duration (indexed like RunData.Results) for the RTFx figure.
	InputAudioSeconds []float64
}

// Summary is a run's metrics: the fields of Python's BenchmarkMetrics (or
// EmbedBenchmarkMetrics when Pooling) plus what the report needs beside
// them. Rates are per second, durations in seconds unless the name says ms.
type Summary struct {
	Pooling bool

	Completed int
	Failed    int
	// TotalInput is the sum of the successful requests' prompt lengths
	// (server-reported when usage carried prompt_tokens).
	TotalInput int
	// TotalOutput is the sum of OutputLens (generation only).
	TotalOutput int
	// TotalInputSequences is the sum of NumInputSequences (pooling only).
	TotalInputSequences int
	// OutputLens has one entry per request: the output token count of a
	// success (see ComputeOptions.CountTokens), 0 for a failure. Generation only.
	OutputLens []int

	DurationS               float64
	RequestThroughput       float64
	RequestGoodput          float64
	OutputThroughput        float64
	TotalTokenThroughput    float64
	InputSequenceThroughput float64
	RTFx                    float64

	TTFT Stats
	// TPOT covers successes with more than one output token.
	TPOT Stats
	ITL  Stats
	E2EL Stats
	// ClientQueueTime and E2ELInclQueue are nil unless ComputeOptions asked.
	ClientQueueTime *Stats
	E2ELInclQueue   *Stats

	// MaxOutputTokensPerS is the largest count of token events in one
	// second (Python's max_output_tokens_per_s; chunks, not tokens).
	MaxOutputTokensPerS float64
	// MaxConcurrentRequests is the largest number of successful requests
	// in flight at one instant.
	MaxConcurrentRequests int

	// Failures holds the errors of the first MaxReportedFailures failed
	// requests, in request order (generation only, as Python prints them).
	Failures []string
}

// Compute derives a run's Summary with Python's formulas (spec §d). Times
// are converted from nanoseconds to float seconds first (ns/1e9) and every
// statistic is computed on those floats in numpy's order, so the printed
// and saved numbers are the ones Python would produce from the same
// timestamps.
func Compute(d *RunData, opts ComputeOptions) (*Summary, error) {
	if err := checkRunInput(d, opts.Percentiles); err != nil {
		return nil, err
	}
	if opts.InputAudioSeconds != nil && len(opts.InputAudioSeconds) != len(d.Results) {
		return nil, errors.New("metrics: InputAudioSeconds must have one entry per result")
	}
	if opts.Pooling {
		return computePooling(d, opts), nil
	}
	return computeGeneration(d, opts), nil
}

// errNoRunData is the error for a nil *RunData.
var errNoRunData = errors.New("metrics: no run data")

// checkRunInput checks what Compute and ComputeTrimmed both need: run data,
// and percentiles that --metric-percentiles accepts.
func checkRunInput(d *RunData, percentiles []float64) error {
	if d == nil {
		return errNoRunData
	}
	for _, p := range percentiles {
		if err := checkPercentile(p); err != nil {
			return err
		}
	}
	return nil
}

// Seconds converts a nanosecond duration or run-clock time to Python's
// float seconds: ns/1e9, the conversion every figure starts from.
func Seconds(ns int64) float64 { return float64(ns) / 1e9 }

// computeGeneration is Python's calculate_metrics.
func computeGeneration(d *RunData, opts ComputeOptions) *Summary {
	s := &Summary{
		DurationS:  Seconds(d.DurationNs),
		OutputLens: make([]int, len(d.Results)),
	}
	var ttfts, tpots, allTPOTs, e2els, queues, queueE2ELs []float64
	n := 0
	for i := range d.Results {
		if d.Results[i].Success {
			n += d.Results[i].NumITLs()
		}
	}
	itls := make([]float64, 0, n)
	var audioS float64
	for i := range d.Results {
		r := &d.Results[i]
		if !r.Success {
			s.Failed++
			if len(s.Failures) < MaxReportedFailures {
				s.Failures = append(s.Failures, r.Error)
			}
			continue
		}
		outLen := outputLen(r, opts.CountTokens)
		s.OutputLens[i] = outLen
		s.TotalInput += r.PromptLen
		ttft, latency := Seconds(r.TTFTNs), Seconds(r.LatencyNs)
		tpot := 0.0
		if outLen > 1 {
			tpot = (latency - ttft) / float64(outLen-1)
			tpots = append(tpots, tpot)
		}
		allTPOTs = append(allTPOTs, tpot)
		for gap := range r.ITLs() {
			itls = append(itls, Seconds(gap))
		}
		ttfts = append(ttfts, ttft)
		e2els = append(e2els, latency)
		queue := Seconds(r.QueueNs)
		queues = append(queues, queue)
		queueE2ELs = append(queueE2ELs, latency+queue)
		if opts.InputAudioSeconds != nil {
			audioS += opts.InputAudioSeconds[i]
		}
		s.Completed++
	}
	for _, n := range s.OutputLens {
		s.TotalOutput += n
	}

	dur := s.DurationS
	s.RequestThroughput = float64(s.Completed) / dur
	s.RequestGoodput = float64(goodCount(opts.Goodput, ttfts, allTPOTs, e2els)) / dur
	s.OutputThroughput = float64(s.TotalOutput) / dur
	s.TotalTokenThroughput = float64(s.TotalInput+s.TotalOutput) / dur
	s.RTFx = audioS / dur

	s.TTFT = summarize(ttfts, opts.Percentiles)
	s.TPOT = summarize(tpots, opts.Percentiles)
	s.ITL = summarizeInPlace(itls, opts.Percentiles)
	s.E2EL = summarize(e2els, opts.Percentiles)
	addQueueStats(s, opts, queues, queueE2ELs)

	if s.Completed > 0 {
		s.MaxConcurrentRequests = peakConcurrency(d.Results)
		s.MaxOutputTokensPerS = peakFromEvents(d.Results)
	}
	return s
}

// computePooling is Python's calculate_metrics_for_embeddings.
func computePooling(d *RunData, opts ComputeOptions) *Summary {
	s := &Summary{Pooling: true, DurationS: Seconds(d.DurationNs)}
	var e2els, queues, queueE2ELs []float64
	for i := range d.Results {
		r := &d.Results[i]
		if !r.Success {
			s.Failed++
			continue
		}
		latency := Seconds(r.LatencyNs)
		e2els = append(e2els, latency)
		queue := Seconds(r.QueueNs)
		queues = append(queues, queue)
		queueE2ELs = append(queueE2ELs, latency+queue)
		s.Completed++
		s.TotalInput += r.PromptLen
		s.TotalInputSequences += r.NumInputSequences
	}
	dur := s.DurationS
	s.RequestThroughput = float64(s.Completed) / dur
	s.InputSequenceThroughput = float64(s.TotalInputSequences) / dur
	s.TotalTokenThroughput = float64(s.TotalInput) / dur
	s.E2EL = summarize(e2els, opts.Percentiles)
	addQueueStats(s, opts, queues, queueE2ELs)
	return s
}

func addQueueStats(s *Summary, opts ComputeOptions, queues, queueE2ELs []float64) {
	if opts.ClientQueue {
		st := summarize(queues, opts.Percentiles)
		s.ClientQueueTime = &st
	}
	if opts.QueueInclusiveE2EL {
		st := summarize(queueE2ELs, opts.Percentiles)
		s.E2ELInclQueue = &st
	}
}

// outputLen is Python's output token count of a successful request:
// usage.completion_tokens when non-zero, else the tokenizer's count of the
// generated text, else 1.
func outputLen(r *RequestResult, count func(string) int) int {
	switch {
	case r.OutputTokens != 0:
		return r.OutputTokens
	case count != nil:
		return count(r.GeneratedText)
	default:
		return 1
	}
}

// goodCount counts the successful requests meeting every configured SLO:
// SLO/1000 ≥ metric for ttft, tpot (0 when one output token) and e2el.
func goodCount(slo map[string]float64, ttfts, tpots, e2els []float64) int {
	if len(slo) == 0 {
		return 0
	}
	type check struct {
		values []float64
		limitS float64
	}
	var checks []check
	for _, c := range []struct {
		name   string
		values []float64
	}{{"ttft", ttfts}, {"tpot", tpots}, {"e2el", e2els}} {
		if ms, ok := slo[c.name]; ok {
			checks = append(checks, check{c.values, ms / 1000})
		}
	}
	good := 0
	for i := range ttfts {
		ok := true
		for _, c := range checks {
			if !(c.limitS >= c.values[i]) {
				ok = false
			}
		}
		if ok {
			good++
		}
	}
	return good
}

// peakConcurrency is the largest number of successful requests in flight
// at once: a sweep over half-open intervals [start, start+latency), with
// ends ordered before starts at equal times.
func peakConcurrency(results []RequestResult) int {
	type event struct {
		t     float64
		delta int
	}
	var events []event
	for i := range results {
		r := &results[i]
		if !r.Success {
			continue
		}
		start := Seconds(r.StartNs)
		events = append(events, event{start, 1}, event{start + Seconds(r.LatencyNs), -1})
	}
	slices.SortFunc(events, func(a, b event) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return cmp.Compare(a.delta, b.delta)
	})
	cur, peak := 0, 0
	for _, e := range events {
		cur += e.delta
		peak = max(peak, cur)
	}
	return peak
}

// secondBuckets returns t0 (the earliest start of a success, in seconds)
// and B = ⌈tEnd - t0⌉ + 1, the number of one-second buckets Python counts
// token events in, tEnd being the latest start+latency.
func secondBuckets(results []RequestResult) (t0 float64, buckets int) {
	t0, tEnd := math.Inf(1), math.Inf(-1)
	for i := range results {
		r := &results[i]
		if !r.Success {
			continue
		}
		start := Seconds(r.StartNs)
		t0 = min(t0, start)
		tEnd = max(tEnd, start+Seconds(r.LatencyNs))
	}
	return t0, int(math.Ceil(tEnd-t0)) + 1
}

// peakFromEvents is Python's max_output_tokens_per_s: each success
// contributes one event at start+ttft and one more per gap, at the running
// sum of its ITL values; event t falls in bucket int(t - t0) (truncated
// toward zero) and only buckets 0..B-1 count.
func peakFromEvents(results []RequestResult) float64 {
	t0, n := secondBuckets(results)
	perSecond := make([]int, n)
	add := func(t float64) {
		if b := int(t - t0); b >= 0 && b < n {
			perSecond[b]++
		}
	}
	for i := range results {
		r := &results[i]
		if !r.Success {
			continue
		}
		t := Seconds(r.StartNs) + Seconds(r.TTFTNs)
		add(t)
		for gap := range r.ITLs() {
			t += Seconds(gap)
			add(t)
		}
	}
	return float64(maxInt(perSecond))
}

func maxInt(v []int) int {
	m := 0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}
