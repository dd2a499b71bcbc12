package tls13

import (
	"bytes"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
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
	key := make([]byte, 16)
	expandLabel(key, false, secret, "key")
	if want := unhex(t, "3fce516009c21727d0f2e4e86ee403bc"); !bytes.Equal(key, want) {
		t.Errorf("key %x, want %x", key, want)
	}
}

// expandLabel's HMAC on the stack gives what crypto/hkdf does, for every
// label and length the keys derive, with both hashes.
func TestExpandLabelMatchesHKDF(t *testing.T) {
	for _, h := range []struct {
		sha384 bool
		new    func() hash.Hash
		size   int
	}{{false, sha256.New, 32}, {true, sha512.New384, 48}} {
		secret := make([]byte, h.size)
		for i := range secret {
			secret[i] = byte(i*7 + 1)
		}
		for _, c := range []struct {
			label string
			n     int
		}{{"key", 16}, {"key", 32}, {"iv", 12}, {"traffic upd", h.size}} {
			full := "tls13 " + c.label
			info := binary.BigEndian.AppendUint16(nil, uint16(c.n))
			info = append(append(append(info, byte(len(full))), full...), 0)
			want, err := hkdf.Expand(h.new, secret, string(info), c.n)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]byte, c.n)
			expandLabel(got, h.sha384, secret, c.label)
			if !bytes.Equal(got, want) {
				t.Errorf("SHA-384 %v, %q, %d bytes: %x, want %x", h.sha384, c.label, c.n, got, want)
			}
		}
	}
}

// A connection's keys are derived on the loop that takes its handshake:
// without garbage.
func TestKeyInitAllocatesNothing(t *testing.T) {
	for _, suite := range []uint16{tls.TLS_AES_128_GCM_SHA256, tls.TLS_AES_256_GCM_SHA384} {
		secret := bytes.Repeat([]byte{9}, 32)
		if suite == tls.TLS_AES_256_GCM_SHA384 {
			secret = bytes.Repeat([]byte{9}, 48)
		}
		var k Key
		if n := testing.AllocsPerRun(20, func() {
			if err := k.Init(suite, secret); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%s: Init allocates %v times", tls.CipherSuiteName(suite), n)
		}
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

func TestSuites(t *testing.T) {
	for _, c := range []struct {
		suite  uint16
		secret int
	}{
		{tls.TLS_AES_128_GCM_SHA256, 32},
		{tls.TLS_AES_256_GCM_SHA384, 48},
		{tls.TLS_CHACHA20_POLY1305_SHA256, 32},
	} {
		k, err := NewKey(c.suite, bytes.Repeat([]byte{3}, c.secret))
		if err != nil {
			t.Fatalf("%s: %v", tls.CipherSuiteName(c.suite), err)
		}
		if k.AEAD.Overhead() != Overhead || k.AEAD.NonceSize() != len(k.iv) {
			t.Errorf("%s: overhead %d, nonce %d", tls.CipherSuiteName(c.suite), k.AEAD.Overhead(), k.AEAD.NonceSize())
		}
		if _, err := NewKey(c.suite, make([]byte, c.secret+1)); err == nil {
			t.Errorf("%s: a secret of %d bytes was taken", tls.CipherSuiteName(c.suite), c.secret+1)
		}
	}
	_, err := NewKey(tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, make([]byte, 32))
	var e UnsupportedSuiteError
	if !errors.As(err, &e) || e.Suite != tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 {
		t.Fatalf("err %v, want UnsupportedSuiteError for a TLS 1.2 suite", err)
	}
}

// A cooled key warms up to the same cipher, and follows a KeyUpdate while
// cool as a warm one does.
func TestCoolWarm(t *testing.T) {
	for _, suite := range []uint16{tls.TLS_AES_128_GCM_SHA256, tls.TLS_CHACHA20_POLY1305_SHA256} {
		secret := bytes.Repeat([]byte{9}, 32)
		warm, _ := NewKey(suite, secret)
		cool, _ := NewKey(suite, secret)
		cool.Cool()
		if cool.AEAD != nil {
			t.Fatal("Cool kept the AEAD")
		}
		if err := warm.Update(); err != nil {
			t.Fatal(err)
		}
		if err := cool.Update(); err != nil {
			t.Fatal(err)
		}
		if cool.AEAD != nil {
			t.Fatal("Update warmed a cool key")
		}
		if err := cool.Warm(); err != nil {
			t.Fatal(err)
		}
		sealed := cool.AEAD.Seal(nil, cool.NextNonce(), []byte("request"), []byte("hdr"))
		p, err := warm.AEAD.Open(nil, warm.NextNonce(), sealed, []byte("hdr"))
		if err != nil || string(p) != "request" {
			t.Errorf("%s: the warmed key's record opened as %q, %v", tls.CipherSuiteName(suite), p, err)
		}
	}
}

// BenchmarkWarm is what a cool write key costs per request it seals: the
// AEAD built again from the key bytes.
func BenchmarkWarm(b *testing.B) {
	for _, suite := range []uint16{tls.TLS_AES_128_GCM_SHA256, tls.TLS_CHACHA20_POLY1305_SHA256} {
		b.Run(tls.CipherSuiteName(suite), func(b *testing.B) {
			var k Key
			if err := k.Init(suite, bytes.Repeat([]byte{1}, 32)); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := k.Warm(); err != nil {
					b.Fatal(err)
				}
				k.Cool()
			}
		})
	}
}

// BenchmarkKeyInit is what a connection's two traffic keys cost the loop
// that takes its handshake.
func BenchmarkKeyInit(b *testing.B) {
	secret := bytes.Repeat([]byte{9}, 32)
	var k Key
	b.ReportAllocs()
	for b.Loop() {
		if err := k.Init(tls.TLS_AES_128_GCM_SHA256, secret); err != nil {
			b.Fatal(err)
		}
	}
}
