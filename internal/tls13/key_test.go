package tls13

import (
	"bytes"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"testing"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// RFC 8448 §3 (simple 1-RTT handshake): the server handshake traffic
// secret's write key and IV.
func TestKeyMatchesRFC8448(t *testing.T) {
	secret := unhex(t, "b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38")
	k, err := NewKey(tls.TLS_AES_128_GCM_SHA256, secret)
	if err != nil {
		t.Fatal(err)
	}
	if want := unhex(t, "5d313eb2671276ee13000b30"); !bytes.Equal(k.iv[:], want) {
		t.Errorf("iv %x, want %x", k.iv, want)
	}
	key, err := expandLabel(k.hash, secret, "key", 16)
	if err != nil {
		t.Fatal(err)
	}
	if want := unhex(t, "3fce516009c21727d0f2e4e86ee403bc"); !bytes.Equal(key, want) {
		t.Errorf("key %x, want %x", key, want)
	}
}

func TestNonceCountsRecords(t *testing.T) {
	k, err := NewKey(tls.TLS_AES_256_GCM_SHA384, bytes.Repeat([]byte{7}, 48))
	if err != nil {
		t.Fatal(err)
	}
	first := append([]byte(nil), k.NextNonce()...)
	if !bytes.Equal(first, k.iv[:]) || k.Seq != 1 {
		t.Fatalf("record 0's nonce %x (seq now %d), want the IV %x and seq 1", first, k.Seq, k.iv)
	}
	second := k.NextNonce()
	if second[11] != k.iv[11]^1 || !bytes.Equal(second[:11], k.iv[:11]) {
		t.Errorf("record 1's nonce %x, want the IV with its last byte ^1", second)
	}
	sealed := k.AEAD.Seal(nil, k.Nonce(5), []byte("token"), nil)
	if _, err := k.AEAD.Open(nil, k.Nonce(6), sealed, nil); err == nil {
		t.Error("a record opened under another sequence number's nonce")
	}
	oldIV := k.iv
	if err := k.Update(); err != nil {
		t.Fatal(err)
	}
	if k.Seq != 0 || k.iv == oldIV {
		t.Errorf("after KeyUpdate seq %d, iv changed %v", k.Seq, k.iv != oldIV)
	}
	if _, err := k.AEAD.Open(nil, k.Nonce(5), sealed, nil); err == nil {
		t.Error("the updated key opened a record of the old one")
	}
}

func TestOnlyAESGCM(t *testing.T) {
	_, err := NewKey(tls.TLS_CHACHA20_POLY1305_SHA256, make([]byte, 32))
	var e UnsupportedSuiteError
	if !errors.As(err, &e) || e.Suite != tls.TLS_CHACHA20_POLY1305_SHA256 {
		t.Fatalf("err %v, want UnsupportedSuiteError for ChaCha20", err)
	}
}
