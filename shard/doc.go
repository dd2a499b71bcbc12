// Package shard is stampede's event loop: one goroutine locked to an OS thread
// and pinned to a CPU, with its own epoll, non-blocking connects, a keep-alive
// connection pool, per-request state machines, timers, and kernel receive
// timestamps on every read.
//
// A run's shards share three things: the request list (read-only), a Queue
// through which the arrival schedule releases requests and which holds the
// global concurrency cap, and a Clock, the run's time base. Everything else
// (connections, buffers, the parsers, the Recorder) belongs to one shard.
//
// Bytes flow without copies or allocations from recvmsg through
// httpwire.Parser (HTTP/1.1 framing), sse.Parser (events) and sse.Decoder
// (OpenAI chunks) into metrics.Stream; every token event parsed from one
// read carries that read's kernel receive stamp (SO_TIMESTAMPING, software
// RX), or the loop's clock when the kernel gave none. Because the stamps
// are the kernel's, the loop may read late without recording late: while
// reads carry stamps it pauses briefly between busy turns, so each wake-up
// serves a batch of events (see coalesceNap).
//
// A loop turn reads each ready connection once (one buffer) and at most
// about 1 MiB in all; connections with more to read wait on a ready list
// for the next turn, so a server that writes without pause cannot keep the
// loop from its deadlines, Stop and Abort or the other connections. What
// responses hold unparsed is charged to a run-wide Budget, and a response
// may be bounded in bytes (Config.MaxResponseBytes). A request is never
// sent twice: one whose reused connection fails before any response byte
// fails.
//
// https:// targets live on the loops too (Config.TLS): crypto/tls does
// each handshake on a bounded pool of goroutines (tlsdial.go,
// tlshandshake.go), then the loop reads and writes the socket itself and
// the connection's record layer (internal/tls13) opens and seals the TLS
// 1.3 records in place (tlsloop.go). Servers that negotiate anything else
// fall back to a goroutine per connection over crypto/tls feeding the
// same parsers and recorder. Start chooses among the three for a run. All
// system calls live in sys_linux.go.
package shard
