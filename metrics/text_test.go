package metrics

import "testing"

// TestKeepUncountedText: with KeepUncountedText a successful stream keeps
// its text exactly when Python would re-tokenize it (no truthy
// completion_tokens after the last usage), and a failed one never does.
func TestKeepUncountedText(t *testing.T) {
	type usage struct{ prompt, completion int64 }
	tests := []struct {
		name     string
		usages   []usage
		fail     bool
		wantText string
		wantOut  int
	}{
		{"no usage", nil, false, "ab", 0},
		{"usage with completion_tokens", []usage{{5, 2}}, false, "", 2},
		{"completion_tokens 0 is falsy", []usage{{5, 0}}, false, "ab", 0},
		{"last usage lacks completion_tokens", []usage{{5, 2}, {6, -1}}, false, "ab", 0},
		{"failed after tokens", nil, true, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := NewRecorder(Options{KeepUncountedText: true})
			var s Stream
			// A first request on the same Stream leaves text behind.
			rec.Begin(&s, 1, 1, 0, 0)
			s.Token(10, []byte("zz"))
			rec.EndStream(&s)

			rec.Begin(&s, 0, 3, 0, 0)
			s.Token(20, []byte("a"))
			s.Token(30, []byte("b"))
			for _, u := range tt.usages {
				s.Usage(u.prompt, u.completion)
			}
			if tt.fail {
				rec.Fail(&s, "connection reset by peer after 2 token events")
			} else {
				rec.EndStream(&s)
			}
			r := gatherTest(2, rec).Results[0]
			if r.GeneratedText != tt.wantText || r.OutputTokens != tt.wantOut {
				t.Errorf("text %q, output tokens %d; want %q, %d", r.GeneratedText, r.OutputTokens, tt.wantText, tt.wantOut)
			}
		})
	}
}

// TestNoTextByDefault: a run that needs no text keeps none, even for a
// stream without usage.
func TestNoTextByDefault(t *testing.T) {
	rec := NewRecorder(Options{})
	var s Stream
	rec.Begin(&s, 0, 3, 0, 0)
	s.Token(20, []byte("a"))
	rec.EndStream(&s)
	if r := gatherTest(1, rec).Results[0]; r.GeneratedText != "" || !r.Success {
		t.Errorf("result %+v, want success without text", r)
	}
}

// BenchmarkStreamTokenKeepUncountedText: copying each token's text into
// the connection's buffer allocates nothing once the buffer has grown.
func BenchmarkStreamTokenKeepUncountedText(b *testing.B) {
	rec := NewRecorder(Options{KeepUncountedText: true})
	var s Stream
	text := []byte(" token")
	b.ReportAllocs()
	for i := range b.N {
		if i%1024 == 0 {
			rec.Begin(&s, 0, 1, 0, 0)
		}
		s.Token(int64(i), text)
	}
}

// TestTokenTextZeroAllocs: a connection's second request of the same
// length records its tokens' text without allocating.
func TestTokenTextZeroAllocs(t *testing.T) {
	rec := NewRecorder(Options{KeepUncountedText: true})
	var s Stream
	text := []byte(" token")
	stream := func() {
		rec.Begin(&s, 0, 1, 0, 0)
		for i := range 200 {
			s.Token(int64(i), text)
		}
	}
	stream()
	if n := testing.AllocsPerRun(20, stream); n != 0 {
		t.Fatalf("%v allocs per 200-token stream after the first, want 0", n)
	}
}
