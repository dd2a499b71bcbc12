package metrics

import "iter"

// PerTokenStats is stampede's per-token view of the inter-token latency,
// for servers that put several tokens in one chunk (speculative decoding,
// multi-token prediction): Python's ITL is the gap between chunks, which
// is then not the gap between tokens.
//
// Per-token ITL follows SGLang's bench_serving for its native backend and
// the proposals for vLLM (vllm#27485, PR 28183): a token event that
// carried k ≥ 1 tokens contributes k samples of gap / k, where gap is the
// time since the previous event that carried a token; the samples are
// weighted by token, and their mean over one request is (last token event
// − first token event) / (tokens − tokens of the first event). The first
// event's tokens have no gap before them (TTFT covers them), and an event
// carrying no token (a chat stream's role chunk) adds its gap to the next
// one's. A request without counts falls back to one token per chunk: its
// chunk gaps enter as they are, and it is counted in Fallback.
type PerTokenStats struct {
	// Requests counts the successful requests summarized; Counted those
	// whose every token event carried a running count; Missing and
	// Invalid those that fell back (RunningMissing, RunningInvalid).
	Requests, Counted, Missing, Invalid int
	// ITL is per-token ITL over every successful request, in Stats'
	// units (milliseconds, numpy's formulas over the per-token samples).
	ITL Stats
	// Samples is the number of per-token ITL samples.
	Samples int
	// TokensPerChunk is the distribution over the counted requests'
	// token events that carried at least one token.
	TokensPerChunk TokensPerChunk
}

// Fallback is how many requests were counted at one token per chunk.
func (p *PerTokenStats) Fallback() int { return p.Missing + p.Invalid }

// TokensPerChunk is how many tokens the counted token events carried.
type TokensPerChunk struct {
	// Chunks counts token events with at least one token, Tokens their
	// tokens; EmptyChunks the token events that carried none.
	Chunks, Tokens, EmptyChunks int64
	// Mean is Tokens / Chunks; P50, P90 and P99 are numpy's linear
	// percentiles of the per-chunk counts (0 without chunks).
	Mean, P50, P90, P99 float64
	// Histogram holds the chunks per token count, ascending by Tokens,
	// counts with no chunk left out.
	Histogram []TokenCount
}

// TokenCount is one histogram bin: Chunks token events carried Tokens
// tokens each.
type TokenCount struct {
	Tokens int   `json:"tokens"`
	Chunks int64 `json:"chunks"`
}

// ComputePerToken summarizes the successful requests' per-token ITL with
// the given percentiles and their tokens per chunk; nil when no successful
// request was tracked (the run did not ask for running usage).
func ComputePerToken(results []RequestResult, percentiles []float64) *PerTokenStats {
	p := &PerTokenStats{}
	var samples []float64
	var hist []int64 // chunks by token count
	var counts []int // one request's counts, reused
	for i := range results {
		r := &results[i]
		if !r.Success || r.ChunkTokens.State == RunningUntracked {
			continue
		}
		p.Requests++
		switch r.ChunkTokens.State {
		case RunningMissing:
			p.Missing++
		case RunningInvalid:
			p.Invalid++
		}
		if r.ChunkTokens.State != RunningCounted {
			for gap := range r.ITLs() {
				samples = append(samples, Seconds(gap))
			}
			continue
		}
		p.Counted++
		counts = counts[:0]
		for k := range r.ChunkTokens.All() {
			counts = append(counts, k)
			if k == 0 {
				p.TokensPerChunk.EmptyChunks++
				continue
			}
			if k >= len(hist) {
				hist = append(hist, make([]int64, k+1-len(hist))...)
			}
			hist[k]++
			p.TokensPerChunk.Chunks++
			p.TokensPerChunk.Tokens += int64(k)
		}
		samples = appendPerTokenGaps(samples, counts, r.ITLs())
	}
	if p.Requests == 0 {
		return nil
	}
	p.Samples = len(samples)
	p.ITL = summarizeInPlace(samples, percentiles)
	p.TokensPerChunk.summarize(hist)
	return p
}

// appendPerTokenGaps appends one request's per-token samples in seconds:
// counts[i] tokens arrived with event i, gapsNs[i] after event i.
func appendPerTokenGaps(dst []float64, counts []int, gapsNs iter.Seq[int64]) []float64 {
	seen := counts[0] > 0 // a token has arrived
	var sinceNs int64     // since the last event that carried one
	i := 1
	for gap := range gapsNs {
		if i >= len(counts) {
			break
		}
		sinceNs += gap
		if k := counts[i]; k > 0 {
			if seen {
				per := Seconds(sinceNs) / float64(k)
				for range k {
					dst = append(dst, per)
				}
			}
			seen, sinceNs = true, 0
		}
		i++
	}
	return dst
}

func (t *TokensPerChunk) summarize(hist []int64) {
	if t.Chunks == 0 {
		return
	}
	t.Mean = float64(t.Tokens) / float64(t.Chunks)
	t.P50 = histPercentile(hist, t.Chunks, 50)
	t.P90 = histPercentile(hist, t.Chunks, 90)
	t.P99 = histPercentile(hist, t.Chunks, 99)
	for k, n := range hist {
		if n > 0 {
			t.Histogram = append(t.Histogram, TokenCount{Tokens: k, Chunks: n})
		}
	}
}

// histPercentile is np.percentile (linear) of the list that holds hist[k]
// copies of k, n values in all, without building it: the values at sorted
// positions ⌊h⌋ and ⌊h⌋+1 are found by counting, then interpolated as
// npPercentileSorted does.
func histPercentile(hist []int64, n int64, pct float64) float64 {
	at := func(pos int64) float64 {
		for k, c := range hist {
			if pos < c {
				return float64(k)
			}
			pos -= c
		}
		return float64(len(hist) - 1)
	}
	h := float64(n-1) * (pct / 100)
	lo := int64(h)
	if lo >= n-1 {
		return at(n - 1)
	}
	return npLerp(at(lo), at(lo+1), h-float64(lo))
}
