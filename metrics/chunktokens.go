package metrics

import (
	"iter"
	"math"
)

// Tokens per chunk. With Options.RunningUsage a stream records how many
// tokens each of its token events carried: the increase of the running
// usage.completion_tokens the server sends in every chunk when asked for
// stream_options.continuous_usage_stats (sse.Chunk.RunningCompletionTokens).
// A count is kept as a uint16 in a shard's tokenArena, two bytes a token
// event, and only when the option is on; without it nothing is stored.

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

// chunkTokens ends the counting of a successful stream with n token
// events: the counts go to the arena when every event carried one.
func (r *Recorder) chunkTokens(s *Stream, n int) ChunkTokens {
	c := &s.running
	if c.state == RunningCounted && len(c.counts) != n {
		c.state = RunningMissing // a token event never reported
	}
	if c.state != RunningCounted {
		return ChunkTokens{State: c.state}
	}
	return r.tokens.appendCounts(c.counts)
}

// A tokenArena holds the tokens-per-event counts of every counted request
// one shard ended, in fixed-size chunks appended in the order the requests
// end, as gapArena holds gaps. Only the shard's own thread appends.
type tokenArena struct {
	chunks [][]uint16
	n      int
}

const (
	tokenChunkBits = 16
	tokenChunkLen  = 1 << tokenChunkBits // 128 KiB a chunk
)

func (a *tokenArena) appendCounts(counts []uint16) ChunkTokens {
	ct := ChunkTokens{State: RunningCounted, arena: a, pos: a.n, n: len(counts)}
	for len(counts) > 0 {
		off := a.n & (tokenChunkLen - 1)
		if off == 0 && a.n>>tokenChunkBits == len(a.chunks) {
			a.chunks = append(a.chunks, make([]uint16, tokenChunkLen))
		}
		k := copy(a.chunks[a.n>>tokenChunkBits][off:], counts)
		counts = counts[k:]
		a.n += k
	}
	return ct
}

// ChunkTokens is how many tokens each of a request's token events carried,
// by its running usage: a range of its shard's arena when State is
// RunningCounted, else empty. The zero value is an untracked request.
type ChunkTokens struct {
	State RunningUsage
	arena *tokenArena
	pos   int
	n     int
}

// Len returns the number of counts (the request's token events when
// counted, else 0).
func (c ChunkTokens) Len() int { return c.n }

// All yields the counts in event order.
func (c ChunkTokens) All() iter.Seq[int] {
	return func(yield func(int) bool) {
		for p := c.pos; p < c.pos+c.n; {
			chunk := c.arena.chunks[p>>tokenChunkBits][p&(tokenChunkLen-1):]
			chunk = chunk[:min(len(chunk), c.pos+c.n-p)]
			for _, v := range chunk {
				if !yield(int(v)) {
					return
				}
			}
			p += len(chunk)
		}
	}
}

// Counts returns the counts as a new slice.
func (c ChunkTokens) Counts() []int {
	out := make([]int, 0, c.n)
	for v := range c.All() {
		out = append(out, v)
	}
	return out
}

// CountedChunkTokens is a counted request's ChunkTokens holding counts,
// one per token event, as a partial result carries them (bench/cluster):
// counts is kept, not copied, and must not change afterwards.
func CountedChunkTokens(counts []uint16) ChunkTokens {
	a := &tokenArena{n: len(counts)}
	for len(counts) > tokenChunkLen {
		a.chunks = append(a.chunks, counts[:tokenChunkLen:tokenChunkLen])
		counts = counts[tokenChunkLen:]
	}
	a.chunks = append(a.chunks, counts)
	return ChunkTokens{State: RunningCounted, arena: a, n: a.n}
}
