package mock

import (
	"strconv"
	"sync/atomic"
)

// Tokens per chunk. By default every stream event carries one token. With
// Config.TokensPerChunk K > 1 each carries K (the last what is left); with
// Config.SpecDecodeStream each decode step is a speculative-decoding step:
// SpecDecodeTokens draft tokens, position i accepted only if every
// earlier one was, each at SpecDecodeAcceptance (so position i at
// acceptance^(i+1), the rate the /metrics counters describe), and the
// event carries the accepted drafts plus the target model's own token.
// The draws are keyed by the request and the event index, so a rerun
// sends the same chunks. /metrics then counts these very drafts
// (specCounters), so the stream and the counters agree: generated tokens
// = drafts + accepted tokens.
//
// A stream's event k carries st.carry tokens starting at token st.done;
// the writer plans it (plan) before anything about the event is decided,
// and advance moves past it once it went out.

// plan returns how many tokens st's next event carries, deciding it on
// first call.
func (w *writer) plan(st *stream) int {
	if st.carry > 0 {
		return st.carry
	}
	n := 1
	switch {
	case w.cfg.TokensPerChunk > 1:
		n = w.cfg.TokensPerChunk
	case w.cfg.SpecDecodeStream && st.kind != kindPooled:
		n = 1 + w.acceptedDrafts(st, st.next)
	}
	st.carry = max(1, min(n, st.outTokens-st.done))
	return st.carry
}

// acceptedDrafts draws how many of event k's draft tokens are accepted:
// the leading positions that pass, each at SpecDecodeAcceptance.
func (w *writer) acceptedDrafts(st *stream, k int) int {
	stepKey := mix(w.cfg.Seed, st.key, saltSpecDecode)
	accepted := 0
	for i := range w.cfg.SpecDecodeTokens {
		if unitFloat(mix(stepKey, uint64(k), uint64(i))) >= w.cfg.SpecDecodeAcceptance {
			break
		}
		accepted++
	}
	return accepted
}

// advance moves st past the event that just went out, counting its
// speculative-decoding step for each choice.
func (w *writer) advance(st *stream) {
	if w.cfg.SpecDecodeStream && st.kind != kindPooled {
		w.spec.step(st.carry-1, len(st.promptTokens))
	}
	st.next++
	st.done += st.carry
	st.carry = 0
}

// carrying reports whether the planned event carries token index t.
func (st *stream) carrying(t int) bool { return st.done <= t && t < st.done+st.carry }

// appendWords appends the text of the tokens the planned event carries.
func (st *stream) appendWords(p []byte) []byte {
	for t := st.done; t < st.done+max(st.carry, 1); t++ {
		p = append(p, st.word(t)...)
	}
	return p
}

// appendChunkUsage appends the usage field of a token or role chunk of
// choice: with continuous_usage_stats the running usage, completion_tokens
// counting the tokens sent so far (role chunks: none yet); otherwise
// completions chunks carry "usage":null when usage was asked for and chat
// chunks nothing, as vLLM sends them.
func (st *stream) appendChunkUsage(p []byte, choice int, role bool) []byte {
	switch {
	case st.continuousUsage:
		sent := st.done + st.carry
		if role {
			sent = 0
		}
		p = append(p, ',')
		return appendUsage(p, st.promptTokens[choice], sent)
	case st.includeUsage && st.kind == kindCompletion:
		return append(p, `,"usage":null`...)
	}
	return p
}

// specCounters count the drafts of SpecDecodeStream for /metrics. The
// writer adds; /metrics reads from an event loop.
type specCounters struct {
	drafts atomic.Uint64
	// perPos[i] counts drafts whose position i was accepted.
	perPos []atomic.Uint64
}

func newSpecCounters(k int) *specCounters { return &specCounters{perPos: make([]atomic.Uint64, k)} }

// step counts one decode step of choices sequences, each with accepted
// drafts accepted.
func (c *specCounters) step(accepted, choices int) {
	c.drafts.Add(uint64(choices))
	for i := range accepted {
		c.perPos[i].Add(uint64(choices))
	}
}

// snapshot returns the drafts and the accepted tokens per position.
func (c *specCounters) snapshot() (drafts float64, perPos []float64) {
	perPos = make([]float64, len(c.perPos))
	for i := range c.perPos {
		perPos[i] = float64(c.perPos[i].Load())
	}
	return float64(c.drafts.Load()), perPos
}

// appendTokensField appends a truth log T record's tokens field: nothing
// for the usual one token, else " <tokens>".
func appendTokensField(b []byte, tokens int) []byte {
	if tokens == 1 {
		return b
	}
	b = append(b, ' ')
	return strconv.AppendInt(b, int64(tokens), 10)
}
