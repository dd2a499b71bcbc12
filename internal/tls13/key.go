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
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"

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
	k.set(secret)
	return nil
}

type keyError string

func (e keyError) Error() string { return string(e) }

const errSecretSize = keyError("TLS 1.3: traffic secret of the wrong size for its suite")

// sha384 reports whether k's suite hashes with SHA-384 (else SHA-256).
func (k *Key) sha384() bool { return k.suite == tls.TLS_AES_256_GCM_SHA384 }

// set derives the key bytes and IV of secret; the AEAD is not touched.
func (k *Key) set(secret []byte) {
	expandLabel(k.key[:k.keyLen], k.sha384(), secret, "key")
	expandLabel(k.iv[:], k.sha384(), secret, "iv")
	k.secretLen = uint8(copy(k.secret[:], secret))
	k.Seq = 0
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
	var next [48]byte
	expandLabel(next[:k.secretLen], k.sha384(), k.secret[:k.secretLen], "traffic upd")
	k.set(next[:k.secretLen])
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

// expandLabel fills out with TLS 1.3's HKDF-Expand-Label of secret with
// an empty context (RFC 8446 §7.1); see expandLabelCtx.
func expandLabel(out []byte, sha384 bool, secret []byte, label string) {
	expandLabelCtx(out, sha384, secret, label, nil)
}

// maxLabelCtx bounds the context an Expand-Label takes: a hash, or a
// session ticket's nonce (at most 255 bytes).
const maxLabelCtx = 255

// expandLabelCtx fills out with TLS 1.3's HKDF-Expand-Label of secret (a
// secret of the suite's hash: at most the hash's block) with context ctx
// (RFC 8446 §7.1), SHA-384 or SHA-256. out never passes the hash's size,
// so HKDF-Expand is a single HMAC (RFC 5869 §2.3: T(1) = HMAC(secret,
// info || 0x01)), computed by hmacSum over stack buffers: crypto/hkdf's
// allocates its HMAC and both hash states on every call, and the loop
// that takes a connection's handshake derives a dozen of these.
func expandLabelCtx(out []byte, sha384 bool, secret []byte, label string, ctx []byte) {
	// The longest label is "c ap traffic": the info is at most 4 + 6 +
	// 12 + 255 bytes and HKDF's counter.
	var info [4 + 6 + 16 + maxLabelCtx + 1]byte
	m := copy(info[:], []byte{byte(len(out) >> 8), byte(len(out)), byte(len("tls13 ") + len(label))})
	m += copy(info[m:], "tls13 ")
	m += copy(info[m:], label)
	info[m] = byte(len(ctx))
	m++
	m += copy(info[m:], ctx[:min(len(ctx), maxLabelCtx)])
	info[m] = 1 // HKDF's counter
	m++
	var sum [48]byte
	hmacSum(&sum, sha384, secret, info[:m])
	copy(out, sum[:len(out)])
}

// hmacSum sets sum to HMAC(key, msg) with SHA-384 or SHA-256 (its first
// 48 or 32 bytes), on the stack: key is at most the hash's block, msg at
// most maxHMACMsg bytes (longer ones are cut, which no caller passes).
func hmacSum(sum *[48]byte, sha384 bool, key, msg []byte) {
	block, size := sha256.BlockSize, sha256.Size
	if sha384 {
		block, size = sha512.BlockSize, sha512.Size384
	}
	var buf [sha512.BlockSize + maxHMACMsg]byte
	pad := func(b byte) {
		for i := range block {
			buf[i] = b
		}
		for i, c := range key[:min(len(key), block)] {
			buf[i] = c ^ b
		}
	}
	pad(0x36)
	m := block + copy(buf[block:], msg[:min(len(msg), maxHMACMsg)])
	if sha384 {
		*sum = sha512.Sum384(buf[:m])
	} else {
		s := sha256.Sum256(buf[:m])
		copy(sum[:], s[:])
	}
	pad(0x5c)
	copy(buf[block:], sum[:size])
	if sha384 {
		*sum = sha512.Sum384(buf[:block+size])
	} else {
		s := sha256.Sum256(buf[:block+size])
		copy(sum[:], s[:])
	}
}

// maxHMACMsg bounds what hmacSum authenticates: an Expand-Label's info,
// an Extract's key material (a shared secret), a transcript hash.
const maxHMACMsg = 4 + 6 + 16 + maxLabelCtx + 1
