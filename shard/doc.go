// Package shard is stampede's event loop: one goroutine locked to an OS thread
// and pinned to a CPU, with its own epoll, non-blocking connects, a keep-alive
// connection pool, per-request state machines, timers, and kernel receive
// timestamps on every read.
package shard
