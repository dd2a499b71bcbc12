// Package mock is a vLLM-compatible mock server for benchmarking benchmark
// clients. It serves the OpenAI-compatible endpoints of `vllm serve` with
// vLLM's field shapes, generates deterministic tokens on a configurable
// timing model, injects faults on request, and logs when every token was
// really handed to the kernel, so a client's timestamps can be judged
// against the truth.
//
// # Structure
//
// gnet event loops accept connections, parse HTTP/1.1 requests (httpwire)
// and their JSON bodies (fastjson), and answer everything that needs no
// schedule at once: /v1/models, /health, /version, /metrics, /tokenize,
// /detokenize, the profile endpoints and errors. A request that generates
// (completions, chat) or pools (embeddings, pooling, rerank) becomes a
// stream handed to the writer: one goroutine that sleeps on a timerfd
// (nanosecond resolution; Go's timers round to the millisecond) and writes
// each token with write(2) at its intended time.
// Writes go straight to the socket under the connection's lock, so the
// time read just before write(2) is what the truth log records.
//
// # Timing model
//
// PerStream: a stream's first token is due TTFT + PrefillPerToken × prompt
// tokens after its arrival (or after it left the MaxNumSeqs queue), then
// one every ITL. DecodeStep: one global step every ITL while anything runs
// or waits; each step admits waiting streams FIFO up to MaxNumSeqs, and
// gives every running stream whose prefill is over its next token, all
// stamped with the same intended time. The admitting step is the prefill
// step, so the first token comes on a later step, not before TTFT +
// prefill has passed. Jitter adds a seeded uniform [0, Jitter) to every
// TTFT and gap (PerStream) or step period (DecodeStep).
//
// A stream gets max_tokens (or max_completion_tokens) tokens per choice;
// without either, vLLM's default of the rest of the context
// (MaxModelLen − prompt tokens), or Config.DefaultMaxTokens if set. With
// OutputUniform and ignore_eos unset the length is drawn from
// [max(1, min_tokens), max_tokens] and a shorter draw ends with
// finish_reason "stop". Token text is one word from a fixed list per
// token, chosen by the request's draw key.
//
// # Streams on the wire
//
// Streaming responses are chunked text/event-stream, one HTTP chunk per SSE
// event. Completions chunks carry choices [{"index","text","logprobs",
// "finish_reason","stop_reason"}] and "usage":null when
// stream_options.include_usage is set; chat chunks carry choices
// [{"index","delta","logprobs","finish_reason"}] and open with a role-only
// delta {"role":"assistant","content":""} sent in the same write as token
// 0. The last token's chunk has finish_reason "length" (or "stop"); then
// the usage chunk (choices [] and usage {"prompt_tokens","total_tokens",
// "completion_tokens"}) if asked for, "data: [DONE]" and the last chunk,
// all in that same write. With stream_options.continuous_usage_stats every
// chunk carries the running usage instead, and with TokensPerChunk or
// SpecDecodeStream a chunk carries several tokens (chunks.go).
//
// # Draws and faults
//
// Every random choice (output length, jitter, fault selection, token
// words, ids) is a hash of Config.Seed and the request's draw key: the
// x-request-id header when present, else the arrival order. Faults (see
// ParseFault) apply to completions and chat requests only. The hostile
// ones (flood, endless-line, huge-headers) answer without end, as fast as
// the client reads (see flooder).
package mock
