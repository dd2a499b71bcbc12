package tls13

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
)

// Gate is the part of a transport under crypto/tls that keeps its reads
// within one TLS record at a time, so that what follows the records
// crypto/tls needs stays unread for the record layer after it, and that
// hands crypto/tls records sealed outside it (see Feed). A transport's
// Read asks Injected first, then reads at most Limit's bytes and reports
// them to Took.
type Gate struct {
	hdr        [HeaderLen]byte // the record header being read
	have, left int             // bytes of hdr read; of the body not yet read
	// inject, while injecting, is what Read returns instead of the
	// socket's bytes, then ErrPaused.
	inject    []byte
	injecting bool
}

// Limit cuts p to the rest of the record being read (its header first).
func (g *Gate) Limit(p []byte) []byte {
	want := g.left
	if want == 0 {
		want = HeaderLen - g.have
	}
	return p[:min(len(p), want)]
}

// Took accounts b, just read into what Limit returned.
func (g *Gate) Took(b []byte) {
	if g.left > 0 {
		g.left -= len(b)
	} else if g.have += copy(g.hdr[g.have:], b); g.have == HeaderLen {
		g.left, g.have = int(binary.BigEndian.Uint16(g.hdr[3:])), 0
	}
}

// Injected is Read's answer while a record is handed over: ok false when
// none is.
func (g *Gate) Injected(p []byte) (n int, err error, ok bool) {
	if !g.injecting {
		return 0, nil, false
	}
	if len(g.inject) == 0 {
		return 0, ErrPaused, true
	}
	n = copy(p, g.inject)
	g.inject = g.inject[n:]
	return n, nil, true
}

// Feed hands tc the record rec through g, its transport's gate: tc's Read
// consumes it and returns without touching the socket.
func Feed(tc *tls.Conn, g *Gate, rec []byte) error {
	g.inject, g.injecting = rec, true
	var one [1]byte
	_, err := tc.Read(one[:])
	g.inject, g.injecting = nil, false
	if !errors.Is(err, ErrPaused) {
		if err == nil {
			err = errors.New("TLS: application data inside a handshake record")
		}
		return err
	}
	return nil
}

// ErrPaused ends a crypto/tls Read once it has consumed a handed-over
// record; it is temporary, so crypto/tls keeps the connection usable.
var ErrPaused error = pausedError{}

type pausedError struct{}

func (pausedError) Error() string   { return "paused" }
func (pausedError) Timeout() bool   { return false }
func (pausedError) Temporary() bool { return true }
