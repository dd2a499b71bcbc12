package httpwire

import (
	"encoding/hex"
	"strings"
	"testing"
)

func TestTraceParentCarriesTraceID(t *testing.T) {
	for _, id := range []string{"bench-0a1b2c3d-0", "bench-0a1b2c3d-9999", "x"} {
		tp := TraceParent(id)
		if len(tp) != TraceParentLen {
			t.Fatalf("TraceParent(%q) = %q: length %d, want %d", id, tp, len(tp), TraceParentLen)
		}
		parts := strings.Split(tp, "-")
		if len(parts) != 4 || parts[0] != "00" || parts[3] != "01" || len(parts[2]) != 16 {
			t.Fatalf("TraceParent(%q) = %q: not a version-00 sampled traceparent", id, tp)
		}
		want := TraceID(id)
		if parts[1] != hex.EncodeToString(want[:]) {
			t.Errorf("TraceParent(%q) trace id %s, want TraceID's %x", id, parts[1], want)
		}
	}
	if TraceID("bench-a-0") == TraceID("bench-a-1") {
		t.Error("two request ids share a trace id")
	}
}

func TestParseTraceParent(t *testing.T) {
	good := TraceParent("bench-1-7")
	if id, ok := ParseTraceParent([]byte(good)); !ok || id != TraceID("bench-1-7") {
		t.Fatalf("ParseTraceParent(%q) = %x, %v; want TraceID's id", good, id, ok)
	}
	bad := []string{
		"",
		good[:54],
		good + "-x",           // version 00 has no more fields
		"ff" + good[2:],       // version ff is invalid
		strings.ToUpper(good), // hex is lower-case
		"00-" + strings.Repeat("0", 32) + good[35:],     // all-zero trace id
		good[:36] + strings.Repeat("0", 16) + good[52:], // all-zero parent id
		strings.Replace(good, "-", "_", 1),
	}
	for _, v := range bad {
		if _, ok := ParseTraceParent([]byte(v)); ok {
			t.Errorf("ParseTraceParent(%q) accepted", v)
		}
	}
	future := "01" + good[2:] + "-more"
	if _, ok := ParseTraceParent([]byte(future)); !ok {
		t.Errorf("ParseTraceParent(%q): a later version's extra fields refused", future)
	}
}

func FuzzParseTraceParent(f *testing.F) {
	f.Add([]byte(TraceParent("bench-1-7")))
	f.Add([]byte("01-" + strings.Repeat("a", 32) + "-" + strings.Repeat("b", 16) + "-01-x"))
	f.Add([]byte("00-zz"))
	f.Fuzz(func(t *testing.T, v []byte) {
		id, ok := ParseTraceParent(v)
		if ok && len(v) >= TraceParentLen && hex.EncodeToString(id[:]) != string(v[3:35]) {
			t.Fatalf("ParseTraceParent(%q) = %x: not the trace id field", v, id)
		}
	})
}
