package metrics

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/internal/py"
)

// The server's Prometheus text (GET /metrics, before and after the run)
// yields two optional reports: speculative decoding and diffusion decoding.
// The parsers follow Python's fetch_spec_decode_metrics and
// fetch_diffusion_metrics line by line, including what they skip.

// SpecDecodeCounters are the speculative-decoding counters of one scrape.
type SpecDecodeCounters struct {
	NumDrafts         int64
	NumDraftTokens    int64
	NumAcceptedTokens int64
	// AcceptedPerPos maps a position="N" label to its accepted tokens.
	AcceptedPerPos map[int]int64
}

// DiffusionCounters are the diffusion-decoding counters of one scrape.
type DiffusionCounters struct {
	NumDenoisingSteps  int64
	NumCanvasPositions int64
	NumCommittedTokens int64
}

// promSample is one sample line that Python's loops consider: its metric
// name (cut at "{"), the whole stripped line, and the value text (what
// follows the first whitespace).
type promSample struct {
	name, line, value string
}

// promSamples yields the `*_total` samples whose line starts with prefix,
// as Python selects them: lines split on "\n" and stripped, empty lines and
// comments skipped, name = first whitespace-separated field cut at "{".
func promSamples(text []byte, prefix string, yield func(promSample)) (found bool) {
	for _, raw := range strings.Split(string(text), "\n") {
		line := strings.TrimFunc(raw, py.IsSpace)
		if line == "" || line[0] == '#' || !strings.HasPrefix(line, prefix) {
			continue
		}
		// line.split(None, 1): parts[0] up to the first whitespace run,
		// parts[-1] the rest, or the whole line when it has no whitespace.
		first, value := line, line
		if i := strings.IndexFunc(line, py.IsSpace); i >= 0 {
			first, value = line[:i], strings.TrimLeftFunc(line[i:], py.IsSpace)
		}
		name, _, _ := strings.Cut(first, "{")
		if !strings.HasSuffix(name, "_total") {
			continue
		}
		found = true
		yield(promSample{name: name, line: line, value: value})
	}
	return found
}

// promInt is Python's int(float(text)); ok is false where Python raises.
func promInt(text string) (int64, bool) {
	f, err := py.ParseFloat(text)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}

// ParseSpecDecode reads the vllm:spec_decode*_total counters from a
// /metrics body, summed over label sets; a name is matched by substring in
// Python's order (num_drafts, num_draft_tokens, num_accepted_tokens_per_pos,
// num_accepted_tokens). ok is false when the body has no such counter.
// Unparsable values are skipped, as Python suppresses their ValueError.
func ParseSpecDecode(text []byte) (c SpecDecodeCounters, ok bool) {
	c.AcceptedPerPos = map[int]int64{}
	ok = promSamples(text, "vllm:spec_decode", func(s promSample) {
		switch {
		case strings.Contains(s.name, "num_drafts"):
			if v, ok := promInt(s.value); ok {
				c.NumDrafts += v
			}
		case strings.Contains(s.name, "num_draft_tokens"):
			if v, ok := promInt(s.value); ok {
				c.NumDraftTokens += v
			}
		case strings.Contains(s.name, "num_accepted_tokens_per_pos"):
			const label = `position="`
			i := strings.Index(s.line, label)
			if i < 0 {
				return
			}
			posText, _, closed := strings.Cut(s.line[i+len(label):], `"`)
			if !closed {
				return
			}
			pos, err := strconv.Atoi(strings.TrimFunc(posText, py.IsSpace))
			if err != nil {
				return
			}
			if v, ok := promInt(s.value); ok {
				c.AcceptedPerPos[pos] += v
			}
		case strings.Contains(s.name, "num_accepted_tokens"):
			if v, ok := promInt(s.value); ok {
				c.NumAcceptedTokens += v
			}
		}
	})
	return c, ok
}

// ParseDiffusion reads the vllm:diffusion*_total counters from a /metrics
// body like ParseSpecDecode.
func ParseDiffusion(text []byte) (c DiffusionCounters, ok bool) {
	ok = promSamples(text, "vllm:diffusion", func(s promSample) {
		v, valid := promInt(s.value)
		if !valid {
			return
		}
		switch {
		case strings.Contains(s.name, "num_denoising_steps"):
			c.NumDenoisingSteps += v
		case strings.Contains(s.name, "num_canvas_positions"):
			c.NumCanvasPositions += v
		case strings.Contains(s.name, "num_committed_tokens"):
			c.NumCommittedTokens += v
		}
	})
	return c, ok
}

// SpecDecodeStats is the run's speculative-decoding report.
type SpecDecodeStats struct {
	NumDrafts      int64
	DraftTokens    int64
	AcceptedTokens int64
	// AcceptanceRate is accepted/draft tokens × 100.
	AcceptanceRate float64
	// AcceptanceLength is 1 + accepted/drafts (0 without drafts).
	AcceptanceLength float64
	// PerPositionAcceptanceRates are fractions, by ascending position.
	PerPositionAcceptanceRates []float64
}

// SpecDecodeDelta turns two scrapes into the run's report; nil when no
// draft tokens were produced during the run.
func SpecDecodeDelta(before, after SpecDecodeCounters) *SpecDecodeStats {
	dDrafts := after.NumDrafts - before.NumDrafts
	dDraftTokens := after.NumDraftTokens - before.NumDraftTokens
	dAccepted := after.NumAcceptedTokens - before.NumAcceptedTokens
	rates := []float64{}
	if dDrafts > 0 {
		var positions []int
		for p := range before.AcceptedPerPos {
			positions = append(positions, p)
		}
		for p := range after.AcceptedPerPos {
			if _, dup := before.AcceptedPerPos[p]; !dup {
				positions = append(positions, p)
			}
		}
		slices.Sort(positions)
		for _, p := range positions {
			b := before.AcceptedPerPos[p]
			a, ok := after.AcceptedPerPos[p]
			if !ok {
				a = b
			}
			rates = append(rates, float64(a-b)/float64(dDrafts))
		}
	}
	if dDraftTokens <= 0 {
		return nil
	}
	st := &SpecDecodeStats{
		NumDrafts:                  dDrafts,
		DraftTokens:                dDraftTokens,
		AcceptedTokens:             dAccepted,
		AcceptanceRate:             float64(dAccepted) / float64(dDraftTokens) * 100,
		PerPositionAcceptanceRates: rates,
	}
	if dDrafts > 0 {
		st.AcceptanceLength = 1 + float64(dAccepted)/float64(dDrafts)
	}
	return st
}

// DiffusionStats is the run's diffusion-decoding report. With S denoising
// steps, P canvas positions and C committed tokens during the run:
// block = P/S, canvases = C/block, denoising steps D = S - canvases.
type DiffusionStats struct {
	// DenoisingSteps is D, fractional; the report prints it truncated.
	DenoisingSteps  float64
	CanvasPositions int64
	CommittedTokens int64
	// CommittedThroughput is C per second of the run.
	CommittedThroughput float64
	// StepsPerCanvas is D / canvases; CommittedPerStep is C / D.
	StepsPerCanvas   float64
	CommittedPerStep float64
}

// DiffusionDelta turns two scrapes into the run's report; nil unless both
// denoising steps and committed tokens grew during the run. Where Python
// would divide by zero (no canvas positions, or D = 0) the value is ±Inf
// or NaN instead of a crash.
func DiffusionDelta(before, after DiffusionCounters, durationS float64) *DiffusionStats {
	dSteps := after.NumDenoisingSteps - before.NumDenoisingSteps
	dPositions := after.NumCanvasPositions - before.NumCanvasPositions
	dCommitted := after.NumCommittedTokens - before.NumCommittedTokens
	if dSteps <= 0 || dCommitted <= 0 {
		return nil
	}
	block := float64(dPositions) / float64(dSteps)
	canvases := float64(dCommitted) / block
	denoising := float64(dSteps) - canvases
	return &DiffusionStats{
		DenoisingSteps:      denoising,
		CanvasPositions:     dPositions,
		CommittedTokens:     dCommitted,
		CommittedThroughput: float64(dCommitted) / durationS,
		StepsPerCanvas:      denoising / canvases,
		CommittedPerStep:    float64(dCommitted) / denoising,
	}
}
