package metrics

import (
	"errors"
	"math"
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
	// InputAudioSeconds, when not nil, gives a request's input audio
	// duration by its index, for the RTFx figure.
	InputAudioSeconds func(index int) float64
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
	TotalInputSequences     int
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

// The lists computeGeneration summarizes, in one statSet.
const (
	listTTFT = iota
	listTPOT
	listITL
	listE2EL
	listQueue
	listQueueE2EL
	generationLists
)

// computeGeneration is Python's calculate_metrics, over passes of the log:
// the first pass takes the counts, totals, goodput and the span of the
// successes; every pass feeds the lists (TTFT, TPOT, ITL, E2EL, queue
// times) to their exact statistics, the second also counts the token
// events per second for the peak.
func computeGeneration(d *RunData, opts ComputeOptions) *Summary {
	s := &Summary{DurationS: Seconds(d.DurationNs)}
	set := NewLists(generationLists, opts.Percentiles)
	good := newGoodput(opts.Goodput)
	var audioS float64
	t0, tEnd := math.Inf(1), math.Inf(-1)
	var perSecond []int
	for pass := 0; set.More() || pass < 2; pass++ {
		if pass == 1 && s.Completed > 0 {
			perSecond = make([]int, int(math.Ceil(tEnd-t0))+1)
		}
		for _, r := range d.Log.All() {
			if !r.Success {
				if pass == 0 {
					s.Failed++
					if len(s.Failures) < MaxReportedFailures {
						s.Failures = append(s.Failures, r.Error)
					}
				}
				continue
			}
			outLen := r.OutputLen(opts.CountTokens)
			ttft, latency := Seconds(r.TTFTNs), Seconds(r.LatencyNs)
			tpot := 0.0
			if outLen > 1 {
				tpot = (latency - ttft) / float64(outLen-1)
				set.Add(listTPOT, tpot)
			}
			set.Add(listTTFT, ttft)
			set.Add(listE2EL, latency)
			queue := Seconds(r.QueueNs)
			set.Add(listQueue, queue)
			set.Add(listQueueE2EL, latency+queue)
			if !set.Done(listITL) { // the gaps, only while their list needs them
				for _, gap := range r.ITLNs {
					set.Add(listITL, Seconds(gap))
				}
			}
			switch pass {
			case 0:
				s.Completed++
				s.TotalInput += r.PromptLen
				s.TotalOutput += outLen
				good.add(ttft, tpot, latency)
				if opts.InputAudioSeconds != nil {
					audioS += opts.InputAudioSeconds(r.Index)
				}
				start := Seconds(r.StartNs)
				t0 = min(t0, start)
				tEnd = max(tEnd, start+latency)
			case 1:
				countEvents(perSecond, t0, r)
			}
		}
		set.EndPass()
	}

	dur := s.DurationS
	s.RequestThroughput = float64(s.Completed) / dur
	s.RequestGoodput = float64(good.count()) / dur
	s.OutputThroughput = float64(s.TotalOutput) / dur
	s.TotalTokenThroughput = float64(s.TotalInput+s.TotalOutput) / dur
	s.RTFx = audioS / dur

	s.TTFT = set.Stats(listTTFT)
	s.TPOT = set.Stats(listTPOT)
	s.ITL = set.Stats(listITL)
	s.E2EL = set.Stats(listE2EL)
	addQueueStats(s, opts, set.Stats(listQueue), set.Stats(listQueueE2EL))

	if s.Completed > 0 {
		s.MaxConcurrentRequests = peakConcurrency(d.Log)
		s.MaxOutputTokensPerS = float64(maxInt(perSecond))
	}
	return s
}

// computePooling is Python's calculate_metrics_for_embeddings.
func computePooling(d *RunData, opts ComputeOptions) *Summary {
	s := &Summary{Pooling: true, DurationS: Seconds(d.DurationNs)}
	set := NewLists(generationLists, opts.Percentiles)
	for set.More() {
		for _, r := range d.Log.All() {
			if !r.Success {
				if set.First() {
					s.Failed++
				}
				continue
			}
			latency := Seconds(r.LatencyNs)
			set.Add(listE2EL, latency)
			queue := Seconds(r.QueueNs)
			set.Add(listQueue, queue)
			set.Add(listQueueE2EL, latency+queue)
			if set.First() {
				s.Completed++
				s.TotalInput += r.PromptLen
				s.TotalInputSequences += r.NumInputSequences
			}
		}
		set.EndPass()
	}
	dur := s.DurationS
	s.RequestThroughput = float64(s.Completed) / dur
	s.InputSequenceThroughput = float64(s.TotalInputSequences) / dur
	s.TotalTokenThroughput = float64(s.TotalInput) / dur
	s.E2EL = set.Stats(listE2EL)
	addQueueStats(s, opts, set.Stats(listQueue), set.Stats(listQueueE2EL))
	return s
}

func addQueueStats(s *Summary, opts ComputeOptions, queues, queueE2ELs Stats) {
	if opts.ClientQueue {
		s.ClientQueueTime = &queues
	}
	if opts.QueueInclusiveE2EL {
		s.E2ELInclQueue = &queueE2ELs
	}
}

// goodput counts the successful requests meeting every configured SLO:
// SLO/1000 ≥ metric for ttft, tpot (0 when one output token) and e2el.
type goodput struct {
	ttft, tpot, e2el float64 // limits in seconds; NaN when not set
	on               bool
	good             int
}

func newGoodput(slo map[string]float64) *goodput {
	g := &goodput{ttft: math.NaN(), tpot: math.NaN(), e2el: math.NaN(), on: len(slo) > 0}
	for name, limit := range map[string]*float64{"ttft": &g.ttft, "tpot": &g.tpot, "e2el": &g.e2el} {
		if ms, ok := slo[name]; ok {
			*limit = ms / 1000
		}
	}
	return g
}

func (g *goodput) add(ttft, tpot, e2el float64) {
	meets := func(limit, v float64) bool { return math.IsNaN(limit) || limit >= v }
	if g.on && meets(g.ttft, ttft) && meets(g.tpot, tpot) && meets(g.e2el, e2el) {
		g.good++
	}
}

func (g *goodput) count() int { return g.good }

// peakConcurrency is the largest number of successful requests in flight
// at once: a sweep over half-open intervals [start, start+latency), with
// ends ordered before starts at equal times. The edges are sorted by an
// external sort (eventsort.go): memory stays bounded however long the run.
func peakConcurrency(l *Log) int {
	es := newEventSort("")
	defer es.close()
	for _, r := range l.All() {
		if !r.Success {
			continue
		}
		start := Seconds(r.StartNs)
		es.add(floatKey(start), 1)
		es.add(floatKey(start+Seconds(r.LatencyNs)), 0)
	}
	cur, peak := 0, 0
	es.each(func(_ uint64, start uint64) {
		if start == 1 {
			cur++
		} else {
			cur--
		}
		peak = max(peak, cur)
	})
	return peak
}

// countEvents adds r's token events to perSecond, Python's
// max_output_tokens_per_s: one event at start+ttft and one more per gap,
// at the running sum of its ITL values; event t falls in bucket
// int(t - t0) (truncated toward zero) and only buckets 0..B-1 count, B
// being ⌈tEnd - t0⌉ + 1 over the successes.
func countEvents(perSecond []int, t0 float64, r *RequestResult) {
	n := len(perSecond)
	add := func(t float64) {
		if b := int(t - t0); b >= 0 && b < n {
			perSecond[b]++
		}
	}
	t := Seconds(r.StartNs) + Seconds(r.TTFTNs)
	add(t)
	for _, gap := range r.ITLNs {
		t += Seconds(gap)
		add(t)
	}
}

func maxInt(v []int) int {
	m := 0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}
