package shard

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"strconv"

	"github.com/stampede-bench/stampede/internal/tls13"
)

// The server's records after a TLS 1.3 handshake are decrypted here, not
// in crypto/tls: its read path allocates on every record it reads from
// the socket, and holds bytes the worker cannot stamp. crypto/tls does the
// handshake, writes the requests, and still sees every post-handshake
// handshake message (session tickets, KeyUpdate): recordReader re-seals
// each under the sequence number crypto/tls expects and hands it over.
// Servers that negotiate TLS 1.2 keep crypto/tls's read path.

const (
	tlsHeaderLen   = 5
	tlsMaxRecord   = 16384 + 256 // TLS 1.3 ciphertext limit
	tlsChangeSpec  = 20
	tlsAlert       = 21
	tlsHandshake   = 22
	tlsAppData     = 23
	tlsKeyUpdate   = 24
	tlsInitialSize = 2 << 10
)

// keyLog takes a connection's secrets from crypto/tls (NSS key log lines)
// and passes every line on to the user's KeyLogWriter, if any.
type keyLog struct {
	server []byte // SERVER_TRAFFIC_SECRET_0
	client []byte // CLIENT_TRAFFIC_SECRET_0
	next   io.Writer
}

func (k *keyLog) Write(line []byte) (int, error) {
	if f := bytes.Fields(line); len(f) == 3 {
		var dst *[]byte
		switch string(f[0]) {
		case "SERVER_TRAFFIC_SECRET_0":
			dst = &k.server
		case "CLIENT_TRAFFIC_SECRET_0":
			dst = &k.client
		}
		if dst != nil {
			secret, err := hex.DecodeString(string(f[2]))
			if err != nil {
				return 0, err
			}
			*dst = secret
		}
	}
	if k.next != nil {
		return k.next.Write(line)
	}
	return len(line), nil
}

// recordReader reads and decrypts the server's records of one connection.
// It reads whatever the socket holds, one recvmsg per wake-up as the
// shards do, and only when no whole record is buffered: so a record's
// stamp is that of the read that brought its last byte, the segment that
// carried it when records arrive one at a time; records that were already
// queued together share the later stamp, as events of one read do on
// plain TCP (and as the kernel's coalescing of queued segments would make
// them anyway).
type recordReader struct {
	key        *tls13.Key
	buf        []byte // ciphertext; whole and partial records in [start, end)
	start, end int
	fed        uint64 // records handed to crypto/tls under the current key
	seal       []byte // a re-sealed record for crypto/tls
}

// reset readies the reader for a new connection, keeping its buffer.
func (r *recordReader) reset() {
	r.key, r.start, r.end, r.fed = nil, 0, 0, 0
}

// record returns the next whole record, header included, reading if none
// is buffered. It stays valid until the next call.
func (r *recordReader) record(raw *stampedConn) ([]byte, error) {
	for {
		need := tlsHeaderLen
		if avail := r.end - r.start; avail >= tlsHeaderLen {
			size := int(binary.BigEndian.Uint16(r.buf[r.start+3:]))
			if size > tlsMaxRecord {
				return nil, errors.New("TLS record of " + strconv.Itoa(size) + " bytes")
			}
			if need = tlsHeaderLen + size; avail >= need {
				rec := r.buf[r.start : r.start+need]
				if r.start += need; r.start == r.end {
					r.start, r.end = 0, 0
				}
				return rec, nil
			}
		}
		if r.start+need > len(r.buf) {
			if need > len(r.buf) {
				grown := make([]byte, max(need, tlsInitialSize, 2*len(r.buf)))
				r.end = copy(grown, r.buf[r.start:r.end])
				r.buf = grown
			} else {
				r.end = copy(r.buf, r.buf[r.start:r.end])
			}
			r.start = 0
		}
		n, err := raw.readAny(r.buf[r.end:])
		r.end += n
		if err != nil {
			if err == io.EOF && r.end > r.start {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}

// recordGate is the part of a transport under crypto/tls that keeps its
// reads within one TLS record at a time, so that what follows the records
// crypto/tls needs stays unread for the record layer after it, and that
// hands crypto/tls records sealed outside it (see feedTLS).
type recordGate struct {
	hdr        [tlsHeaderLen]byte // the record header being read
	have, left int                // bytes of hdr read; of the body not yet read
	// inject, while injecting, is what Read returns instead of the
	// socket's bytes, then errPaused.
	inject    []byte
	injecting bool
}

// limit cuts p to the rest of the record being read (its header first).
func (g *recordGate) limit(p []byte) []byte {
	want := g.left
	if want == 0 {
		want = tlsHeaderLen - g.have
	}
	return p[:min(len(p), want)]
}

// took accounts b, just read into what limit returned.
func (g *recordGate) took(b []byte) {
	if g.left > 0 {
		g.left -= len(b)
	} else if g.have += copy(g.hdr[g.have:], b); g.have == tlsHeaderLen {
		g.left, g.have = int(binary.BigEndian.Uint16(g.hdr[3:])), 0
	}
}

// injected is Read's answer while a record is handed over: ok false when
// none is.
func (g *recordGate) injected(p []byte) (n int, err error, ok bool) {
	if !g.injecting {
		return 0, nil, false
	}
	if len(g.inject) == 0 {
		return 0, errPaused, true
	}
	n = copy(p, g.inject)
	g.inject = g.inject[n:]
	return n, nil, true
}

// feedTLS hands tc the record rec through g, its transport's gate: tc's
// Read consumes it and returns without touching the socket.
func feedTLS(tc *tls.Conn, g *recordGate, rec []byte) error {
	g.inject, g.injecting = rec, true
	var one [1]byte
	_, err := tc.Read(one[:])
	g.inject, g.injecting = nil, false
	if !errors.Is(err, errPaused) {
		if err == nil {
			err = errors.New("TLS: application data inside a handshake record")
		}
		return err
	}
	return nil
}

// errTLSAlert is a fatal alert from the server.
type errTLSAlert byte

func (e errTLSAlert) Error() string { return "TLS alert " + strconv.Itoa(int(e)) }

// next returns the plaintext of the next application data record; a
// close_notify is io.EOF. Handshake messages go to tc. The plaintext stays
// valid until the next call.
func (r *recordReader) next(raw *stampedConn, tc *tls.Conn) ([]byte, error) {
	for {
		rec, err := r.record(raw)
		if err != nil {
			return nil, err
		}
		typ, p, err := openRecord(r.key, rec)
		if err != nil {
			return nil, err
		}
		switch typ {
		case tlsChangeSpec:
			continue
		case tlsAppData:
			return p, nil
		case tlsAlert:
			if err := alertError(p); err != errCloseNotify {
				return nil, err
			}
			return nil, io.EOF
		case tlsHandshake:
			if err := r.handOver(raw, tc, p); err != nil {
				return nil, err
			}
		default:
			return nil, errors.New("TLS: unexpected content type " + strconv.Itoa(int(typ)))
		}
	}
}

// handOver gives crypto/tls the handshake messages in msg, sealed as the
// record it expects next, and follows a KeyUpdate.
func (r *recordReader) handOver(raw *stampedConn, tc *tls.Conn, msg []byte) error {
	k := r.key
	size := len(msg) + 1 + k.AEAD.Overhead()
	r.seal = append(r.seal[:0], tlsAppData, 3, 3, byte(size>>8), byte(size))
	r.seal = append(r.seal, msg...)
	r.seal = append(r.seal, tlsHandshake)
	r.seal = k.AEAD.Seal(r.seal[:tlsHeaderLen], k.Nonce(r.fed), r.seal[tlsHeaderLen:], r.seal[:tlsHeaderLen])
	r.fed++
	if err := feedTLS(tc, &raw.recordGate, r.seal); err != nil {
		return err
	}
	if hasKeyUpdate(msg) {
		if err := k.Update(); err != nil {
			return err
		}
		r.fed = 0
	}
	return nil
}

// hasKeyUpdate reports whether the handshake messages in msg, one after
// another, include a KeyUpdate (the last message of its record, RFC 8446
// §5.1). Only message types are looked at, never bytes inside a body.
func hasKeyUpdate(msg []byte) bool {
	for len(msg) >= 4 {
		if msg[0] == tlsKeyUpdate {
			return true
		}
		n := 4 + (int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3]))
		msg = msg[min(n, len(msg)):]
	}
	return false
}

// errPaused ends a crypto/tls Read once it has consumed a handed-over
// record; it is temporary, so crypto/tls keeps the connection usable.
var errPaused error = pausedError{}

type pausedError struct{}

func (pausedError) Error() string   { return "paused" }
func (pausedError) Timeout() bool   { return false }
func (pausedError) Temporary() bool { return true }
