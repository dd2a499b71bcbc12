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
