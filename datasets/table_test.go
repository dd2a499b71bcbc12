package datasets

import "testing"

// A table gives back every request's id, output length and audio, ids
// following prefix + index or not.
func TestTableKeepsWhatThePhasesRead(t *testing.T) {
	ids := []string{"p0", "p1", "p2", "p4", "p5", "", "", "x", "p8", "p08", "q9"}
	tab := NewTable("p")
	for i, id := range ids {
		r := &Request{RequestID: id, ExpectedOutputLen: 10 + i}
		if i == 3 {
			r.Audio = &Audio{DurationSec: 1.5}
		}
		tab.Add(r)
	}
	if tab.Len() != len(ids) {
		t.Fatalf("Len = %d", tab.Len())
	}
	for i, id := range ids {
		if got := tab.RequestID(i); got != id {
			t.Errorf("RequestID(%d) = %q, want %q", i, got, id)
		}
		if got := tab.ExpectedOutputLen(i); got != 10+i {
			t.Errorf("ExpectedOutputLen(%d) = %d", i, got)
		}
	}
	if tab.AudioSec(3) != 1.5 || tab.AudioSec(2) != 0 || tab.AudioSec(10) != 0 {
		t.Errorf("audio: %v %v %v", tab.AudioSec(3), tab.AudioSec(2), tab.AudioSec(10))
	}
	if tab.RequestID(-1) != "" || tab.RequestID(99) != "" || tab.ExpectedOutputLen(99) != 0 {
		t.Error("out of range gives something")
	}
	if n := len(tab.ids.runs); n > 6 {
		t.Errorf("%d runs for %d ids", n, len(ids))
	}
	before := tab.RequestID(5)
	tab.SentAs(4, "e")
	if tab.RequestID(4) != "e" || tab.RequestID(5) != before {
		t.Errorf("after SentAs(4, \"e\"), RequestID(4) = %q, RequestID(5) = %q (was %q)", tab.RequestID(4), tab.RequestID(5), before)
	}
}
