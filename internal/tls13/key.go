// Package tls13 is the TLS 1.3 record layer (RFC 8446 §5, §7) for the
// places that read or write records outside crypto/tls: one direction's
// record protection key (Key), record framing, opening and sealing
// (record.go), the hand-over of records to crypto/tls (Gate), and a
// client connection's record layer after a handshake crypto/tls did
// (Records, behind RecordLayer), which the shard loops use; the mock
// server's record layer uses the keys. AES-GCM and ChaCha20-Poly1305
// suites.
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

	"golang.org/x/crypto/chacha20poly1305"
)

// Overhead is the AEAD tag every record carries (16 bytes for each TLS
// 1.3 suite).
const Overhead = 16

// Key is one direction's traffic key. AEAD seals or opens a record with
// the nonce of its sequence number; Seq is the next record's number.
//
// A key is warm (AEAD set) from NewKey on; Cool lets its AEAD go, keeping
// only the 16 or 32 key bytes, and Warm rebuilds it: a direction that
// seals one request per exchange need not hold the cipher's expanded
// state (about 800 bytes for AES-GCM) between requests.
type Key struct {
	AEAD cipher.AEAD
	Seq  uint64

	iv        [12]byte
	nonce     [12]byte
	key       [32]byte
	secret    [48]byte
	suite     uint16
	keyLen    uint8
	secretLen uint8
}

// UnsupportedSuiteError is NewKey's answer for a suite that is not one of
// TLS 1.3's AES-GCM and ChaCha20-Poly1305 suites.
type UnsupportedSuiteError struct{ Suite uint16 }

func (e UnsupportedSuiteError) Error() string {
	return "cipher suite " + tls.CipherSuiteName(e.Suite) + " is not a TLS 1.3 suite"
}

// NewKey derives the key and IV of a traffic secret (from an NSS key log
// line, e.g. SERVER_TRAFFIC_SECRET_0), sequence number 0, warm.
func NewKey(suite uint16, secret []byte) (*Key, error) {
	k := &Key{}
	if err := k.init(suite, secret); err != nil {
		return nil, err
	}
	return k, k.Warm()
}

// Init makes k the key of a traffic secret as NewKey does, but cool (no
// AEAD; Warm builds it), in place: a connection can hold its keys inside
// its own state rather than as objects of their own.
func (k *Key) Init(suite uint16, secret []byte) error {
	*k = Key{}
	return k.init(suite, secret)
}

func (k *Key) init(suite uint16, secret []byte) error {
	switch suite {
	case tls.TLS_AES_128_GCM_SHA256:
		k.keyLen = 16
	case tls.TLS_AES_256_GCM_SHA384, tls.TLS_CHACHA20_POLY1305_SHA256:
		k.keyLen = 32
	default:
		return UnsupportedSuiteError{suite}
	}
	k.suite = suite
	size := sha256.Size
	if suite == tls.TLS_AES_256_GCM_SHA384 {
		size = sha512.Size384
	}
	if len(secret) != size {
		return errSecretSize
	}
	return k.set(secret)
}

type keyError string

func (e keyError) Error() string { return string(e) }

const errSecretSize = keyError("TLS 1.3: traffic secret of the wrong size for its suite")

func (k *Key) hash() func() hash.Hash {
	if k.suite == tls.TLS_AES_256_GCM_SHA384 {
		return sha512.New384
	}
	return sha256.New
}

// set derives the key bytes and IV of secret; the AEAD is not touched.
func (k *Key) set(secret []byte) error {
	h := k.hash()
	key, err := expandLabel(h, secret, "key", int(k.keyLen))
	if err != nil {
		return err
	}
	iv, err := expandLabel(h, secret, "iv", len(k.iv))
	if err != nil {
		return err
	}
	copy(k.key[:], key)
	copy(k.iv[:], iv)
	k.secretLen = uint8(copy(k.secret[:], secret))
	k.Seq = 0
	return nil
}

// Warm builds the AEAD from the key bytes if Cool let it go.
func (k *Key) Warm() error {
	if k.AEAD != nil {
		return nil
	}
	key := k.key[:k.keyLen]
	if k.suite == tls.TLS_CHACHA20_POLY1305_SHA256 {
		a, err := chacha20poly1305.New(key)
		if err != nil {
			return err
		}
		k.AEAD = a
		return nil
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return err
	}
	a, err := cipher.NewGCM(block)
	if err != nil {
		return err
	}
	k.AEAD = a
	return nil
}

// Cool lets the AEAD go; Warm brings it back.
func (k *Key) Cool() { k.AEAD = nil }

// Update moves to the next traffic secret (KeyUpdate, RFC 8446 §7.2) and
// sequence number 0. A warm key stays warm, a cool one cool.
func (k *Key) Update() error {
	next, err := expandLabel(k.hash(), k.secret[:k.secretLen], "traffic upd", int(k.secretLen))
	if err != nil {
		return err
	}
	if err := k.set(next); err != nil {
		return err
	}
	if k.AEAD == nil {
		return nil
	}
	k.AEAD = nil
	return k.Warm()
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
