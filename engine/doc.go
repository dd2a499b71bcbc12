// Package engine runs a benchmark's requests over the shards: CPU and NUMA
// topology, shard placement and pinning, the arrival schedule, the global
// concurrency cap, start and stop, progress snapshots, and gathering the
// shards' results.
//
// Run (or Start, then Runner.Wait) takes a Config of pre-encoded requests
// and returns a Result: the merged metrics.RunData, the ramp-up events, and
// Health, the client's account of how well it kept up (CPU time and
// preemptions per shard, the longest event-loop turn, the schedule lag, and
// the share of reads that carried a kernel timestamp).
package engine
