// Package httpwire is stampede's HTTP/1.1 framing in both directions, kept
// apart from sockets.
//
// The client side encodes each benchmark request into bytes once, before the
// clock starts (AppendRequest), and parses responses incrementally as the
// shard's reads arrive (Parser.Feed), handing de-framed body bytes to a
// Handler together with the receive timestamp of the read that carried them.
// The server side, for the mock server, reads requests from a buffer that
// grows as bytes arrive (RequestParser.Parse) and frames responses
// (AppendStatusLine, AppendHeader, AppendChunk, ...). Both parsers share the
// line, field, length and chunk rules and report a *ProtocolError.
//
// The package knows nothing of SSE or JSON, and nothing here allocates per
// body byte: buffers belong to the caller and slices handed to a Handler are
// valid only for the duration of the call.
package httpwire
