package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/metrics"
)

// --per-token-itl's outputs: its block and the sidecar's "per_token"
// (bench/pertoken.go says what the flag measures).

// SidecarPerToken is --per-token-itl's account in the sidecar.
type SidecarPerToken struct {
	// Requests counts the successful requests; Counted those whose every
	// token event carried a running usage.completion_tokens; Fallback
	// those that did not (Missing: some event had none; Invalid: the
	// count fell or jumped by more than 65,535), counted at one token per
	// chunk.
	Requests int `json:"requests"`
	Counted  int `json:"counted"`
	Fallback int `json:"fallback"`
	Missing  int `json:"missing"`
	Invalid  int `json:"invalid"`
	// ITLPerChunk is Python's ITL (gaps between token events);
	// ITLPerToken each gap split evenly over the tokens its later event
	// carried, one sample a token (Samples of them).
	ITLPerChunk SidecarStats `json:"itl_per_chunk"`
	ITLPerToken SidecarStats `json:"itl_per_token"`
	Samples     int          `json:"itl_per_token_samples"`
	// TokensPerChunk is over the counted requests' token events.
	TokensPerChunk SidecarTokensPerChunk `json:"tokens_per_chunk"`
	// Note says why figures fell back; absent when none did.
	Note string `json:"note,omitempty"`
	// PerRequest is kept with --save-detailed: each successful request's
	// tokens per token event, in request order.
	PerRequest []SidecarRequestTokens `json:"per_request,omitempty"`
}

// SidecarRequestTokens is one request's running usage: RunningUsage is
// "counted", "missing" or "invalid"; ChunkTokens, when counted, holds the
// tokens of each token event (the result's itls[i][j] is the gap before
// event j+1).
type SidecarRequestTokens struct {
	Index        int    `json:"index"`
	RunningUsage string `json:"running_usage"`
	ChunkTokens  []int  `json:"chunk_tokens"`
}

// SidecarTokensPerChunk is the tokens-per-chunk distribution: over the
// token events that carried at least one token (EmptyChunks counts the
// others, such as a chat stream's role chunk), numpy's linear percentiles
// and the chunks per token count.
type SidecarTokensPerChunk struct {
	Chunks      int64                `json:"chunks"`
	Tokens      int64                `json:"tokens"`
	EmptyChunks int64                `json:"empty_chunks"`
	Mean        float64              `json:"mean"`
	P50         float64              `json:"p50"`
	P90         float64              `json:"p90"`
	P99         float64              `json:"p99"`
	Histogram   []metrics.TokenCount `json:"histogram"`
}

// PerTokenNote says what fell back and why; "" when nothing did.
func PerTokenNote(p *metrics.PerTokenStats) string {
	switch {
	case p.Fallback() == 0:
		return ""
	case p.Counted == 0:
		return "the server sent no running usage.completion_tokens in its chunks (it ignores stream_options.continuous_usage_stats " +
			"or the backend has none): ITL per token falls back to one token per chunk and equals ITL per chunk; tokens per chunk are unknown"
	}
	parts := []string{}
	if p.Missing > 0 {
		parts = append(parts, fmt.Sprintf("%d had a chunk without running usage.completion_tokens", p.Missing))
	}
	if p.Invalid > 0 {
		parts = append(parts, fmt.Sprintf("%d had a running count that fell or jumped by more than 65535 (several choices in one stream?)", p.Invalid))
	}
	return fmt.Sprintf("%d of %d requests fell back to one token per chunk in ITL per token and are left out of tokens per chunk: %s",
		p.Fallback(), p.Requests, strings.Join(parts, "; "))
}

// NewSidecarPerToken is --per-token-itl's account of p; chunkITL is
// Python's ITL.
func NewSidecarPerToken(p *metrics.PerTokenStats, chunkITL metrics.Stats) *SidecarPerToken {
	t := p.TokensPerChunk
	hist := t.Histogram
	if hist == nil {
		hist = []metrics.TokenCount{}
	}
	return &SidecarPerToken{
		Requests: p.Requests, Counted: p.Counted, Fallback: p.Fallback(), Missing: p.Missing, Invalid: p.Invalid,
		ITLPerChunk: sidecarStats(chunkITL), ITLPerToken: sidecarStats(p.ITL), Samples: p.Samples,
		TokensPerChunk: SidecarTokensPerChunk{
			Chunks: t.Chunks, Tokens: t.Tokens, EmptyChunks: t.EmptyChunks,
			Mean: t.Mean, P50: t.P50, P90: t.P90, P99: t.P99, Histogram: hist,
		},
		Note: PerTokenNote(p),
	}
}

// NewSidecarRequestTokens is each successful request's running usage, in
// request order, for --save-detailed.
func NewSidecarRequestTokens(l *metrics.Log) []SidecarRequestTokens {
	out := []SidecarRequestTokens{}
	for _, r := range l.All() {
		ct := r.ChunkTokens
		if !r.Success || ct.State == metrics.RunningUntracked {
			continue
		}
		out = append(out, SidecarRequestTokens{Index: r.Index, RunningUsage: ct.State.String(), ChunkTokens: ct.Counts()})
	}
	return out
}

// PerTokenTitle heads the --per-token-itl block.
const PerTokenTitle = " Tokens per Chunk (stampede) "

// maxHistogramRows bounds the histogram rows of the block; larger counts
// share the last row (the sidecar keeps every bin).
const maxHistogramRows = 16

// WritePerToken prints the --per-token-itl block after Python's block:
// the requests counted, the tokens-per-chunk distribution and histogram,
// then ITL per chunk (Python's figures) and per token in Python's row
// format. p nil (no successful request) prints one line.
func WritePerToken(w io.Writer, p *metrics.PerTokenStats, chunkITL metrics.Stats) error {
	c := pyout.NewConsole(w)
	c.Header(PerTokenTitle, '=')
	if p == nil {
		c.Line("No successful request to count tokens in.")
		c.Rule()
		return c.Flush()
	}
	c.Row("Requests with running usage:", p.Counted)
	c.Row("Requests at one token per chunk:", p.Fallback())
	t := p.TokensPerChunk
	if t.Chunks > 0 {
		c.Row("Chunks with tokens:", t.Chunks)
		c.Row("Chunks without tokens:", t.EmptyChunks)
		c.RowF("Mean tokens per chunk:", t.Mean)
		c.RowF("P50 tokens per chunk:", t.P50)
		c.RowF("P90 tokens per chunk:", t.P90)
		c.RowF("P99 tokens per chunk:", t.P99)
		c.Header("Chunks by Tokens Carried", '-')
		for i, bin := range t.Histogram {
			if i == maxHistogramRows-1 && len(t.Histogram) > maxHistogramRows {
				var rest int64
				for _, b := range t.Histogram[i:] {
					rest += b.Chunks
				}
				c.Row(strconv.Itoa(bin.Tokens)+" tokens or more:", rest)
				break
			}
			unit := " tokens:"
			if bin.Tokens == 1 {
				unit = " token:"
			}
			c.Row(strconv.Itoa(bin.Tokens)+unit, bin.Chunks)
		}
	} else {
		c.Line("No running usage: tokens per chunk unknown.")
	}
	c.Section(pyout.Section{Name: "ITL per chunk", Header: "ITL per Chunk (Python's ITL)", Stats: &chunkITL})
	c.Section(pyout.Section{Name: "ITL per token", Header: "ITL per Token", Stats: &p.ITL})
	c.Rule()
	return c.Flush()
}

// PerTokenOutputs is what --per-token-itl gives after Python's block, from
// a run's records (a single host's, or a cluster's merged): the block on
// stdout, what fell back on stderr, and the sidecar's account (with each
// request's counts when detailed); chunkITL is Python's ITL.
func PerTokenOutputs(stdout, stderr io.Writer, results *metrics.Log, percentiles []float64, chunkITL metrics.Stats, detailed bool) (*SidecarPerToken, error) {
	p := metrics.ComputePerToken(results, percentiles)
	var account *SidecarPerToken
	if p != nil {
		account = NewSidecarPerToken(p, chunkITL)
		if detailed {
			account.PerRequest = NewSidecarRequestTokens(results)
		}
		if note := PerTokenNote(p); note != "" {
			fmt.Fprintln(stderr, "per-token ITL: "+note+".")
		}
	}
	return account, WritePerToken(stdout, p, chunkITL)
}
