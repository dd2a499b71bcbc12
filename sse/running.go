package sse

// Running usage. Asked for stream_options {"include_usage": true,
// "continuous_usage_stats": true}, vLLM puts a usage object in every
// chunk of a completions or chat stream, token chunks included, whose
// completion_tokens is the number of tokens generated so far for that
// choice. The increase from one token event to the next is how many
// tokens the later one carried: more than one where speculative decoding
// or multi-token prediction accepted several tokens in one step, none on
// a chat stream's role chunk. The scan keeps the usage of every chunk
// anyway, so reading it costs one number conversion per token event and
// no allocation.

// runningCompletion returns usage.completion_tokens of the chunk just
// scanned, or -1 when its usage is not an object or the count is absent,
// null or not a number.
func (d *Decoder) runningCompletion() int64 {
	if d.f.usage.t != jsonObject {
		return -1
	}
	return d.count(&d.f.completion)
}
