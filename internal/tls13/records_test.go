package tls13

import (
	"bytes"
	"crypto/tls"
	"strings"
	"testing"
)

// fuzzKey is a fixed AES-128-GCM traffic key, so sealed seeds stay valid.
func fuzzKey(tb testing.TB) *Key {
	k, err := NewKey(tls.TLS_AES_128_GCM_SHA256, bytes.Repeat([]byte{7}, 32))
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// FuzzLoopRecords feeds a byte stream to a connection's record layer as
// a shard loop does: split off whole records, open each in place, handle the
// handshake messages (tickets to a sink, as on a connection whose
// handshake was a Resumer's). It must never panic, return more plaintext than the
// record held, or accept a record it did not open; a KeyUpdate asking for
// an answer queues exactly one record to write.
func FuzzLoopRecords(f *testing.F) {
	seal := fuzzKey(f)
	var stream []byte
	stream = Seal(stream, seal, TypeApplicationData, []byte("data: {}\n\n"))
	f.Add(stream)
	f.Add(Seal(nil, seal, TypeHandshake, []byte{4, 0, 0, 4, 1, 2, 3, 4}))                                                 // a ticket, nobody to take it
	f.Add(Seal(nil, fuzzKey(f), TypeHandshake, []byte{4, 0, 0, 16, 0, 0, 0, 60, 1, 2, 3, 4, 1, 9, 0, 2, 'a', 'b', 0, 0})) // one the sink takes
	ku := Seal(nil, fuzzKey(f), TypeHandshake, []byte{MsgKeyUpdate, 0, 0, 1, 1})
	updated := fuzzKey(f)
	updated.Seq = 1
	updated.Update()
	f.Add(Seal(ku, updated, TypeApplicationData, []byte("after the update")))
	f.Add(Seal(nil, fuzzKey(f), TypeAlert, []byte{1, 0}))
	f.Add(Seal(nil, fuzzKey(f), TypeAlert, []byte{2, 40}))
	f.Add(Seal(nil, fuzzKey(f), TypeHandshake, []byte{MsgKeyUpdate, 0, 0, 2, 1, 1}))
	f.Add([]byte{20, 3, 3, 0, 1, 1})
	f.Add([]byte{22, 3, 3, 0, 2, 0, 0})
	f.Add([]byte{23, 3, 3, 0xff, 0xff})
	f.Add([]byte{23, 3, 3, 0, 17, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(stream[:len(stream)-1])
	f.Fuzz(func(t *testing.T, b []byte) {
		lt := &Records{read: *fuzzKey(t), write: *fuzzKey(t), sink: sinkFunc(func(*Ticket) {}), resLen: 32}
		for len(b) > 0 {
			n, err := Split(b)
			if err != nil || n == 0 {
				if err == nil && len(b) >= HeaderLen && HeaderLen+(int(b[3])<<8|int(b[4])) <= len(b) {
					t.Fatalf("a whole record of %d bytes not split off", len(b))
				}
				return
			}
			rec := b[:n]
			b = b[n:]
			typ, p, err := Open(&lt.read, rec)
			if err != nil {
				return
			}
			if typ != TypeChangeCipherSpec && len(p) > n-HeaderLen-1-lt.read.AEAD.Overhead() {
				t.Fatalf("%d bytes of plaintext from a %d-byte record", len(p), n)
			}
			if typ == TypeHandshake {
				before := len(lt.reply)
				_, found, requested, kerr := FindKeyUpdate(p)
				if err := lt.handshakeMsgs(p); err != nil {
					return
				}
				if grew := len(lt.reply) > before; grew != (kerr == nil && found && requested) {
					t.Fatalf("KeyUpdate %v (requested %v), answer queued %v", found, requested, grew)
				}
			}
		}
	})
}

// TestSealOpenRoundTrip: what Seal seals, Open opens, content
// type included, under matching sequence numbers.
func TestSealOpenRoundTrip(t *testing.T) {
	w, r := fuzzKey(t), fuzzKey(t)
	var stream []byte
	msgs := []string{"", "x", strings.Repeat("y", MaxPlaintext)}
	for _, m := range msgs {
		stream = Seal(stream, w, TypeApplicationData, []byte(m))
	}
	for _, m := range msgs {
		n, err := Split(stream)
		if err != nil || n == 0 {
			t.Fatalf("split: %d, %v", n, err)
		}
		typ, p, err := Open(r, stream[:n])
		if err != nil || typ != TypeApplicationData || string(p) != m {
			t.Fatalf("opened type %d, %d bytes, %v; want %d bytes of application data", typ, len(p), err, len(m))
		}
		stream = stream[n:]
	}
	if _, _, err := Open(r, Seal(nil, fuzzKey(t), TypeApplicationData, []byte("replayed"))); err == nil {
		t.Error("a record sealed under sequence number 0 opened as number 3")
	}
}
