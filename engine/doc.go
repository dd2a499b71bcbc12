// Package engine runs a benchmark's requests over the shards: CPU and NUMA
// topology, shard placement and pinning, the arrival schedule, the global
// concurrency cap, start and stop, progress snapshots, and gathering the
// shards' results.
package engine
