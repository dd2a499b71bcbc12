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

// The fallback transport's side of TLS 1.3 records: the server's records
// are read off the socket here and opened by tls13.Reader, not by
// crypto/tls (see there why). Servers that negotiate TLS 1.2 keep
// crypto/tls's read path.

// keyLog takes a connection's secrets from crypto/tls (NSS key log lines)
// and passes every line on to the user's KeyLogWriter, if any.
type keyLog struct {
	server []byte // SERVER_TRAFFIC_SECRET_0
	client []byte // CLIENT_TRAFFIC_SECRET_0
	next   io.Writer
}

func (k *keyLog) Write(line []byte) (int, error) {
	// A line is "LABEL CLIENT_RANDOM SECRET\n" in hex; of the four a
	// handshake writes, only the two traffic secrets are kept, parsed
	// without splitting the line (it runs in every handshake).
	var dst *[]byte
	rest := line
	switch {
	case bytes.HasPrefix(line, serverTrafficSecret):
		dst, rest = &k.server, line[len(serverTrafficSecret):]
	case bytes.HasPrefix(line, clientTrafficSecret):
		dst, rest = &k.client, line[len(clientTrafficSecret):]
	}
	if dst != nil {
		rest = bytes.TrimRight(rest, "\r\n")
		if i := bytes.IndexByte(rest, ' '); i > 0 && bytes.IndexByte(rest[i+1:], ' ') < 0 {
			h := rest[i+1:]
			secret := make([]byte, hex.DecodedLen(len(h)))
			if _, err := hex.Decode(secret, h); err != nil {
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

var (
	serverTrafficSecret = []byte("SERVER_TRAFFIC_SECRET_0 ")
	clientTrafficSecret = []byte("CLIENT_TRAFFIC_SECRET_0 ")
)

// tlsInitialSize is a record reader's first buffer.
const tlsInitialSize = 2 << 10

// recordReader reads and decrypts the server's records of one connection.
// It reads whatever the socket holds, one recvmsg per wake-up as the
// shards do, and only when no whole record is buffered: so a record's
// stamp is that of the read that brought its last byte, the segment that
// carried it when records arrive one at a time; records that were already
// queued together share the later stamp, as events of one read do on
// plain TCP (and as the kernel's coalescing of queued segments would make
// them anyway).
type recordReader struct {
	open       tls13.Reader
	buf        []byte // ciphertext; whole and partial records in [start, end)
	start, end int
}

// reset readies the reader for a new connection, keeping its buffer.
func (r *recordReader) reset() {
	r.open.Reset(nil)
	r.start, r.end = 0, 0
}

// record returns the next whole record, header included, reading if none
// is buffered. It stays valid until the next call.
func (r *recordReader) record(raw *stampedConn) ([]byte, error) {
	for {
		need := tls13.HeaderLen
		if avail := r.end - r.start; avail >= tls13.HeaderLen {
			size := int(binary.BigEndian.Uint16(r.buf[r.start+3:]))
			if size > tls13.MaxCiphertext {
				return nil, errors.New("TLS record of " + strconv.Itoa(size) + " bytes")
			}
			if need = tls13.HeaderLen + size; avail >= need {
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

// next returns the plaintext of the next application data record; a
// close_notify is io.EOF. Handshake messages go to tc. The plaintext stays
// valid until the next call.
func (r *recordReader) next(raw *stampedConn, tc *tls.Conn) ([]byte, error) {
	for {
		rec, err := r.record(raw)
		if err != nil {
			return nil, err
		}
		if data, ok, err := r.open.Open(rec, tc, &raw.Gate); ok || err != nil {
			return data, err
		}
	}
}
