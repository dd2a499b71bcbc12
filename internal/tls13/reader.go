package tls13

import (
	"crypto/tls"
	"errors"
	"io"
	"strconv"
)

// Reader is the read side of a connection whose handshake and writes
// crypto/tls keeps (a transport that gives each connection a goroutine):
// crypto/tls's own read path allocates on every record and holds bytes
// the transport cannot stamp, so the server's records are opened here
// instead. crypto/tls still sees every post-handshake handshake message
// (session tickets, KeyUpdate): each is re-sealed under the key and
// sequence number crypto/tls expects and handed over through its
// transport's Gate, so crypto/tls follows a KeyUpdate, answering it with
// its own write key, as the server's read key here follows it too.
// (Records, on a transport that writes itself, hands over tickets only.)
type Reader struct {
	// Key is the server's traffic key; nil leaves the records to
	// crypto/tls.
	Key  *Key
	fed  uint64 // records handed to crypto/tls under the current key
	seal []byte // a re-sealed record for crypto/tls
}

// Reset makes r read under k (nil: not at all), keeping its buffer.
func (r *Reader) Reset(k *Key) { r.Key, r.fed = k, 0 }

// Open opens the whole record rec (header included) in place: ok with
// the plaintext of application data; not ok, without error, for a record
// taken here (ChangeCipherSpec, handshake messages handed to tc through
// gate); io.EOF for close_notify. The plaintext stays valid until rec's
// bytes are reused.
func (r *Reader) Open(rec []byte, tc *tls.Conn, gate *Gate) (data []byte, ok bool, err error) {
	typ, p, err := Open(r.Key, rec)
	if err != nil {
		return nil, false, err
	}
	switch typ {
	case TypeChangeCipherSpec:
		return nil, false, nil
	case TypeApplicationData:
		return p, true, nil
	case TypeAlert:
		if err := Alert(p); err != ErrCloseNotify {
			return nil, false, err
		}
		return nil, false, io.EOF
	case TypeHandshake:
		return nil, false, r.handOver(tc, gate, p)
	}
	return nil, false, errors.New("TLS: unexpected content type " + strconv.Itoa(int(typ)))
}

// handOver gives crypto/tls the handshake messages in msg, sealed as the
// record it expects next, and follows a KeyUpdate.
func (r *Reader) handOver(tc *tls.Conn, gate *Gate, msg []byte) error {
	k := r.Key
	size := len(msg) + 1 + k.AEAD.Overhead()
	r.seal = append(r.seal[:0], TypeApplicationData, 3, 3, byte(size>>8), byte(size))
	r.seal = append(r.seal, msg...)
	r.seal = append(r.seal, TypeHandshake)
	r.seal = k.AEAD.Seal(r.seal[:HeaderLen], k.Nonce(r.fed), r.seal[HeaderLen:], r.seal[:HeaderLen])
	r.fed++
	if err := Feed(tc, gate, r.seal); err != nil {
		return err
	}
	if HasKeyUpdate(msg) {
		if err := k.Update(); err != nil {
			return err
		}
		r.fed = 0
	}
	return nil
}
