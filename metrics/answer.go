package metrics

// What the server said about a request beyond what Python keeps: the
// status and error body of a failed answer, and the server's own output
// token count wherever the stream carried it. Recording them costs a
// request a few stores; nothing is allocated per token, and a failed
// request's message becomes a string once, at its end.

// UsageSource says where a request's ServerTokens came from.
type UsageSource uint8

const (
	// UsageNone: the server sent no usage.completion_tokens.
	UsageNone UsageSource = iota
	// UsageChunk: the last count came in a usage chunk without choices,
	// the one Python reads (RequestResult.OutputTokens holds it too).
	UsageChunk
	// UsageInTokenChunk: the last count came inside a chunk that still had
	// choices (llama.cpp's last completions chunk, or the running usage of
	// continuous_usage_stats); Python never reads it, and counts the text
	// with the tokenizer instead.
	UsageInTokenChunk
)

// String names the source as the sidecar does.
func (u UsageSource) String() string {
	switch u {
	case UsageChunk:
		return "usage_chunk"
	case UsageInTokenChunk:
		return "token_chunk"
	}
	return "none"
}

// servedCount is the last completion count a stream's server sent.
type servedCount struct {
	tokens int64
	where  UsageSource
}

// ServedTokens records a usage.completion_tokens the server sent as a JSON
// number, in a chunk with choices (inTokenChunk) or in a usage chunk. The
// last one wins, as Python's last usage does. A usage chunk's count is
// also Python's output_tokens as given, negative or not: Python's `if
// output_tokens` takes any non-zero number.
func (s *Stream) ServedTokens(n int64, inTokenChunk bool) {
	s.served.tokens = n
	if inTokenChunk {
		s.served.where = UsageInTokenChunk
		return
	}
	s.served.where = UsageChunk
	s.outputTokens = int(n)
}

// Answered records the status of the request's answer and, for a failed
// one, the message of its error body (copied; bounded by the caller).
func (s *Stream) Answered(status int, message []byte) {
	s.status = status
	s.errMessage = append(s.errMessage[:0], message...)
}
