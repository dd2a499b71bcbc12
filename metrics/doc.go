// Package metrics records per-request results and computes `vllm bench
// serve`'s statistics from them with Python-identical formulas (spec §d).
// A Recorder belongs to one shard; results are merged only at the end.
//
// Compute turns the merged RunData into a Summary: counts, throughputs,
// goodput, peaks, and mean/median/std/percentiles of TTFT, TPOT, ITL, E2EL
// and the client queue, each computed on float seconds in numpy 2.2's order
// of operations (sums over 8,192-value blocks, each pairwise; linear
// percentiles) so the printed and saved digits are Python's. Every
// per-request value and every inter-token gap is kept exactly, with or
// without --save-detailed; nothing printed comes from a histogram. Times are nanoseconds everywhere else in the
// package. The package also parses the inputs Python parses for these
// figures: --goodput, --metric-percentiles, and the server's Prometheus
// counters for the speculative- and diffusion-decoding reports.
package metrics
