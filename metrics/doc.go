// Package metrics records per-request results and computes `vllm bench
// serve`'s statistics from them with Python-identical formulas (spec §d).
// A Recorder belongs to one shard; results are merged only at the end.
package metrics
