package metrics

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
func ComputePerToken(l *Log, percentiles []float64) *PerTokenStats {
	p := &PerTokenStats{}
	itl := newExactStat(percentiles)
	var hist []int64 // chunks by token count
	for pass := 0; !itl.done; pass++ {
		for _, r := range l.All() {
			if !r.Success || r.ChunkTokens.State == RunningUntracked {
				continue
			}
			first := pass == 0
			if first {
				p.Requests++
				switch r.ChunkTokens.State {
				case RunningMissing:
					p.Missing++
				case RunningInvalid:
					p.Invalid++
				}
			}
			if r.ChunkTokens.State != RunningCounted {
				for _, gap := range r.ITLNs {
					itl.add(Seconds(gap))
				}
				continue
			}
			counts := r.ChunkTokens.counts
			if first {
				p.Counted++
				for _, k := range counts {
					if k == 0 {
						p.TokensPerChunk.EmptyChunks++
						continue
					}
					if int(k) >= len(hist) {
						hist = append(hist, make([]int64, int(k)+1-len(hist))...)
					}
					hist[k]++
					p.TokensPerChunk.Chunks++
					p.TokensPerChunk.Tokens += int64(k)
				}
			}
			perTokenGaps(counts, r.ITLNs, itl.add)
		}
		if p.Requests == 0 {
			return nil
		}
		itl.endPass()
	}
	p.Samples = int(itl.n)
	p.ITL = itl.stats()
	p.TokensPerChunk.summarize(hist)
	return p
}

// perTokenGaps adds one request's per-token samples in seconds: counts[i]
// tokens arrived with event i, gapsNs[i] after event i.
func perTokenGaps(counts []uint16, gapsNs []int64, add func(float64)) {
	seen := counts[0] > 0 // a token has arrived
	var sinceNs int64     // since the last event that carried one
	for i, gap := range gapsNs {
		if i+1 >= len(counts) {
			break
		}
		sinceNs += gap
		if k := counts[i+1]; k > 0 {
			if seen {
				per := Seconds(sinceNs) / float64(k)
				for range k {
					add(per)
				}
			}
			seen, sinceNs = true, 0
		}
	}
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
