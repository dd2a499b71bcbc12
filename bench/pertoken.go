package bench

import (
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/metrics"
)

// --per-token-itl. A server that puts several tokens in one chunk
// (speculative decoding, multi-token prediction) makes Python's ITL a gap
// between chunks, not between tokens. With the flag the completions and
// chat bodies ask for stream_options {"include_usage": true,
// "continuous_usage_stats": true}, vLLM's running usage in every chunk;
// the shards count the tokens each token event carried from it
// (metrics.ChunkTokens), and after the run a block and the sidecar give
// ITL per chunk (Python's figures, unchanged), ITL per token
// (metrics.PerTokenStats) and the tokens-per-chunk distribution. Python's
// block and result JSON are the same with or without the flag; only the
// request body differs.

// perToken prints the --per-token-itl block, says on stderr what fell
// back, and returns the sidecar's account; nil without the flag.
func (r *run) perToken(results *metrics.Log, s *metrics.Summary) (*report.SidecarPerToken, error) {
	if !r.cfg.PerTokenITL {
		return nil, nil
	}
	return report.PerTokenOutputs(r.stdout, r.stderr, results, r.cfg.SelectedPercentiles, s.ITL, r.cfg.SaveDetailed)
}
