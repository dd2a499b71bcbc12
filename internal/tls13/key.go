// Package tls13 holds one direction's TLS 1.3 record protection key
// (RFC 8446 §7.3) for the two places that read or write records outside
// crypto/tls: the client's record reader (shard) and the mock server's
// record layer. AES-GCM suites only.
package tls13

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/binary"
	"hash"
)

// Key is one direction's traffic key. AEAD seals or opens a record with
// the nonce of its sequence number; Seq is the next record's number.
type Key struct {
	AEAD cipher.AEAD
	Seq  uint64

	iv     [12]byte
	nonce  [12]byte
	secret []byte
	hash   func() hash.Hash
	keyLen int
}

// UnsupportedSuiteError is NewKey's answer for a suite other than
// TLS_AES_128_GCM_SHA256 and TLS_AES_256_GCM_SHA384.
type UnsupportedSuiteError struct{ Suite uint16 }

func (e UnsupportedSuiteError) Error() string {
	return "cipher suite " + tls.CipherSuiteName(e.Suite) + " is not AES-GCM"
}

// NewKey derives the key and IV of a traffic secret (from an NSS key log
// line, e.g. SERVER_TRAFFIC_SECRET_0), sequence number 0.
func NewKey(suite uint16, secret []byte) (*Key, error) {
	k := &Key{}
	switch suite {
	case tls.TLS_AES_128_GCM_SHA256:
		k.hash, k.keyLen = sha256.New, 16
	case tls.TLS_AES_256_GCM_SHA384:
		k.hash, k.keyLen = sha512.New384, 32
	default:
		return nil, UnsupportedSuiteError{suite}
	}
	return k, k.set(secret)
}

func (k *Key) set(secret []byte) error {
	key, err := expandLabel(k.hash, secret, "key", k.keyLen)
	if err != nil {
		return err
	}
	iv, err := expandLabel(k.hash, secret, "iv", len(k.iv))
	if err != nil {
		return err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return err
	}
	if k.AEAD, err = cipher.NewGCM(block); err != nil {
		return err
	}
	copy(k.iv[:], iv)
	k.secret, k.Seq = secret, 0
	return nil
}

// Update moves to the next traffic secret (KeyUpdate, RFC 8446 §7.2) and
// sequence number 0.
func (k *Key) Update() error {
	next, err := expandLabel(k.hash, k.secret, "traffic upd", len(k.secret))
	if err != nil {
		return err
	}
	return k.set(next)
}

// Nonce is record seq's nonce: the IV XOR the 64-bit sequence number. The
// slice is the key's own, valid until the next call.
func (k *Key) Nonce(seq uint64) []byte {
	k.nonce = k.iv
	for i := range 8 {
		k.nonce[4+i] ^= byte(seq >> (56 - 8*i))
	}
	return k.nonce[:]
}

// NextNonce is Nonce(Seq), then counts the record.
func (k *Key) NextNonce() []byte {
	n := k.Nonce(k.Seq)
	k.Seq++
	return n
}

// expandLabel is TLS 1.3's HKDF-Expand-Label with an empty context.
func expandLabel(h func() hash.Hash, secret []byte, label string, n int) ([]byte, error) {
	full := "tls13 " + label
	info := binary.BigEndian.AppendUint16(make([]byte, 0, 4+len(full)), uint16(n))
	info = append(info, byte(len(full)))
	info = append(info, full...)
	info = append(info, 0)
	return hkdf.Expand(h, secret, string(info), n)
}
