// Package multiturn is `stampede multiturn`: conversations driven turn by
// turn against a chat completions endpoint, each request carrying the
// history so far, with sessions as the unit of concurrency, think time
// between turns, and TTFT, TPOT, ITL and E2EL reported by turn index,
// where a server's prefix cache shows. Its options follow vLLM's
// benchmarks/multi_turn tool; its requests go through the engine's shards
// like serve's (a Feed run: each turn is released when the answer it
// follows has come back).
package multiturn
