package tls13

import "testing"

// A session ticket whose length has bit 2 of its low byte set, with a
// KeyUpdate type byte where a misread length would land, is not a KeyUpdate;
// a KeyUpdate after a ticket in the same record is.
func TestHasKeyUpdateWalksMessageLengths(t *testing.T) {
	ticket := func(bodyLen int) []byte {
		m := []byte{4, byte(bodyLen >> 16), byte(bodyLen >> 8), byte(bodyLen)}
		body := make([]byte, bodyLen)
		for i := range body {
			body[i] = MsgKeyUpdate // every body byte looks like a message type
		}
		return append(m, body...)
	}
	keyUpdate := []byte{MsgKeyUpdate, 0, 0, 1, 0}
	for _, n := range []int{0, 4, 5, 7, 0x104, 0x145, 0x1ff04} {
		if HasKeyUpdate(ticket(n)) {
			t.Errorf("a %d-byte ticket read as a KeyUpdate", n)
		}
		if two := append(ticket(n), ticket(n+3)...); HasKeyUpdate(two) {
			t.Errorf("two tickets (%d, %d bytes) read as a KeyUpdate", n, n+3)
		}
		if !HasKeyUpdate(append(ticket(n), keyUpdate...)) {
			t.Errorf("KeyUpdate after a %d-byte ticket not seen", n)
		}
	}
	if !HasKeyUpdate(keyUpdate) {
		t.Error("a lone KeyUpdate not seen")
	}
}
