package metrics

import (
	"iter"
	"math"
)

// Tokens per chunk. With Options.RunningUsage a stream records how many
// tokens each of its token events carried: the increase of the running
// usage.completion_tokens the server sends in every chunk when asked for
// stream_options.continuous_usage_stats (sse.Chunk.RunningCompletionTokens).
// A stream keeps its counts as uint16s while it runs, and its record keeps
// them as runs of equal counts (record.go); without the option nothing is
// stored.

// RunningUsage says what a request's running usage gave.
type RunningUsage uint8

const (
	// RunningUntracked: the run did not ask for running usage, or the
	// request did not succeed.
	RunningUntracked RunningUsage = iota
	// RunningCounted: every token event carried a running count, and the
	// counts never fell; ChunkTokens holds one count per token event.
	RunningCounted
	// RunningMissing: some token event carried no running count (a server
	// that ignores continuous_usage_stats sends none at all).
	RunningMissing
	// RunningInvalid: a running count fell, or rose by more than
	// maxChunkTokens in one event (a batched completions prompt, whose
	// choices each count their own tokens, looks like this).
	RunningInvalid
)

// String names the state as the sidecar does.
func (u RunningUsage) String() string {
	switch u {
	case RunningCounted:
		return "counted"
	case RunningMissing:
		return "missing"
	case RunningInvalid:
		return "invalid"
	}
	return "untracked"
}

// maxChunkTokens is the most tokens one token event may carry: a count is
// stored in 16 bits. No server puts 65,535 tokens in one chunk of a
// stream; a larger step means the counts are not one choice's.
const maxChunkTokens = math.MaxUint16

// runningCounter turns a stream's running counts into tokens per event.
// It lives in the Stream and reuses its buffer across requests.
type runningCounter struct {
	counts []uint16
	last   int64
	state  RunningUsage
}

// firstCountsCap is the capacity a counter's buffer starts with (64 bytes).
const firstCountsCap = 32

func (c *runningCounter) begin(on bool) {
	c.counts, c.last, c.state = c.counts[:0], 0, RunningUntracked
	if on {
		c.state = RunningCounted
		if c.counts == nil {
			c.counts = make([]uint16, 0, firstCountsCap)
		}
	}
}

// add takes the running count of the next token event, -1 for none.
func (c *runningCounter) add(completionTokens int64) {
	if c.state != RunningCounted {
		return
	}
	switch step := completionTokens - c.last; {
	case completionTokens < 0:
		c.state = RunningMissing
	case step < 0 || step > maxChunkTokens:
		c.state = RunningInvalid
	default:
		c.counts = append(c.counts, uint16(step))
		c.last = completionTokens
	}
}

// RunningUsage records the running usage.completion_tokens of the token
// event just recorded by Token (-1 when the chunk carried none). It does
// nothing unless the recorder's Options.RunningUsage is set.
func (s *Stream) RunningUsage(completionTokens int64) {
	s.running.add(completionTokens)
}

// result ends the counting of a successful stream with n token events:
// its counts, when every event carried one. The counts stay the counter's
// (valid until its next begin).
func (c *runningCounter) result(n int) ChunkTokens {
	if c.state == RunningCounted && len(c.counts) != n {
		c.state = RunningMissing // a token event never reported
	}
	if c.state != RunningCounted {
		return ChunkTokens{State: c.state}
	}
	return ChunkTokens{State: RunningCounted, counts: c.counts}
}

// ChunkTokens is how many tokens each of a request's token events carried,
// by its running usage: one count per token event when State is
// RunningCounted, else none. The zero value is an untracked request.
type ChunkTokens struct {
	State  RunningUsage
	counts []uint16
}

// Len returns the number of counts (the request's token events when
// counted, else 0).
func (c ChunkTokens) Len() int { return len(c.counts) }

// All yields the counts in event order.
func (c ChunkTokens) All() iter.Seq[int] {
	return func(yield func(int) bool) {
		for _, v := range c.counts {
			if !yield(int(v)) {
				return
			}
		}
	}
}

// Counts returns the counts as a new slice.
func (c ChunkTokens) Counts() []int {
	out := make([]int, len(c.counts))
	for i, v := range c.counts {
		out[i] = int(v)
	}
	return out
}

// CountedChunkTokens is a counted request's ChunkTokens holding counts,
// one per token event: counts is kept, not copied.
func CountedChunkTokens(counts []uint16) ChunkTokens {
	return ChunkTokens{State: RunningCounted, counts: counts}
}
