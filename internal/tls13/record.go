package tls13

import (
	"encoding/binary"
	"errors"
	"strconv"
)

// The TLS 1.3 record layer (RFC 8446 §5) as a transport that reads and
// writes the socket itself needs it once crypto/tls has done the
// handshake: find a whole record in what was read (Split), open it in
// place (Open), seal data as records (Seal), tell an alert's meaning
// (Alert) and find a KeyUpdate among handshake messages (FindKeyUpdate).

// Record framing and content types (RFC 8446 §5.1).
const (
	// HeaderLen is a record's header: type, legacy version, length.
	HeaderLen = 5
	// MaxCiphertext is the longest protected record body TLS 1.3 allows
	// (2^14 plus 256 bytes of expansion); a longer one is an error.
	MaxCiphertext = 16384 + 256
	// MaxPlaintext is the most data one record may carry.
	MaxPlaintext = 16384

	TypeChangeCipherSpec = 20
	TypeAlert            = 21
	TypeHandshake        = 22
	TypeApplicationData  = 23

	// MsgKeyUpdate is the KeyUpdate handshake message's type.
	MsgKeyUpdate = 24
)

// Split returns the length of the first whole record in b, header
// included, or 0 if b does not hold one yet. A header announcing more than
// a TLS 1.3 record may carry is an error.
func Split(b []byte) (int, error) {
	if len(b) < HeaderLen {
		return 0, nil
	}
	size := int(binary.BigEndian.Uint16(b[3:]))
	if size > MaxCiphertext {
		return 0, errors.New("TLS record of " + strconv.Itoa(size) + " bytes")
	}
	if len(b) < HeaderLen+size {
		return 0, nil
	}
	return HeaderLen + size, nil
}

// Open opens the protected record rec (header included) in place with k,
// counts it, and returns its content type and plaintext. A
// ChangeCipherSpec record (sent unprotected for middlebox compatibility)
// comes back as such, unopened.
func Open(k *Key, rec []byte) (typ byte, p []byte, err error) {
	hdr, body := rec[:HeaderLen], rec[HeaderLen:]
	switch hdr[0] {
	case TypeApplicationData:
	case TypeChangeCipherSpec:
		return TypeChangeCipherSpec, nil, nil
	default:
		return 0, nil, errors.New("TLS: unexpected plaintext record of type " + strconv.Itoa(int(hdr[0])))
	}
	p, err = k.AEAD.Open(body[:0], k.Nonce(k.Seq), body, hdr)
	if err != nil {
		return 0, nil, errors.New("TLS: record authentication failed")
	}
	k.Seq++
	for len(p) > 0 && p[len(p)-1] == 0 {
		p = p[:len(p)-1]
	}
	if len(p) == 0 {
		return 0, nil, errors.New("TLS: record without a content type")
	}
	return p[len(p)-1], p[:len(p)-1], nil
}

// Seal appends to dst the record of content type typ carrying p (at most
// MaxPlaintext bytes), sealed with k (warm) under its next number.
func Seal(dst []byte, k *Key, typ byte, p []byte) []byte {
	size := len(p) + 1 + Overhead
	start := len(dst)
	dst = append(dst, TypeApplicationData, 3, 3, byte(size>>8), byte(size))
	dst = append(dst, p...)
	dst = append(dst, typ)
	hdr := dst[start : start+HeaderLen]
	return k.AEAD.Seal(dst[:start+HeaderLen], k.NextNonce(), dst[start+HeaderLen:], hdr)
}

// AlertCode is a fatal alert from the peer.
type AlertCode byte

func (e AlertCode) Error() string { return "TLS alert " + strconv.Itoa(int(e)) }

// ErrCloseNotify is the close_notify alert: the peer's end of the stream.
var ErrCloseNotify = errors.New("close_notify")

// Alert turns an alert record's plaintext into its error: ErrCloseNotify
// for close_notify, else its AlertCode.
func Alert(p []byte) error {
	switch {
	case len(p) != 2:
		return errors.New("TLS: malformed alert")
	case p[1] == 0:
		return ErrCloseNotify
	}
	return AlertCode(p[1])
}

// FindKeyUpdate finds a KeyUpdate among the handshake messages in msg (it
// is the last of its record, RFC 8446 §5.1): at is where it begins
// (len(msg) if there is none) and requested its request_update flag.
func FindKeyUpdate(msg []byte) (at int, found, requested bool, err error) {
	for at+4 <= len(msg) {
		n := int(msg[at+1])<<16 | int(msg[at+2])<<8 | int(msg[at+3])
		if msg[at] == MsgKeyUpdate {
			if n != 1 || at+5 != len(msg) || msg[at+4] > 1 {
				return at, false, false, errors.New("TLS: malformed KeyUpdate")
			}
			return at, true, msg[at+4] == 1, nil
		}
		at += 4 + n
	}
	return len(msg), false, false, nil
}

// HasKeyUpdate reports whether the handshake messages in msg, one after
// another, include a KeyUpdate. Only message types are looked at, never
// bytes inside a body.
func HasKeyUpdate(msg []byte) bool {
	for len(msg) >= 4 {
		if msg[0] == MsgKeyUpdate {
			return true
		}
		n := 4 + (int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3]))
		msg = msg[min(n, len(msg)):]
	}
	return false
}
