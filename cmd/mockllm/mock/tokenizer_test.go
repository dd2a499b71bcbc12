package mock

import (
	"strings"
	"testing"
)

func TestMockTokenizer(t *testing.T) {
	tok := NewMockTokenizer()
	tests := []struct {
		text string
		ids  []int32
	}{
		{"", nil},
		{"ab", []int32{'a', 'b'}},
		{" the", []int32{256}},
		{" the of", []int32{256, 257}},
		{" then", []int32{256, 'n'}},
		{" there", []int32{295}},
		{"the", []int32{'t', 'h', 'e'}},
		{"\xff\x00", []int32{0xff, 0}},
	}
	for _, tt := range tests {
		got := tok.Encode(nil, tt.text, true)
		if len(got) != len(tt.ids) {
			t.Errorf("Encode(%q) = %v, want %v", tt.text, got, tt.ids)
			continue
		}
		for i := range got {
			if got[i] != tt.ids[i] {
				t.Errorf("Encode(%q) = %v, want %v", tt.text, got, tt.ids)
				break
			}
		}
		if back := tok.Decode(got, true); back != tt.text {
			t.Errorf("Decode(Encode(%q)) = %q", tt.text, back)
		}
	}
	if tok.VocabSize() != 256+len(words) || tok.NumSpecialTokensToAdd() != 0 || len(tok.AllSpecialIDs()) != 0 {
		t.Errorf("vocab %d, specials %d %v", tok.VocabSize(), tok.NumSpecialTokensToAdd(), tok.AllSpecialIDs())
	}
	if tok.Decode([]int32{-1, int32(tok.VocabSize())}, false) != "\uFFFD\uFFFD" {
		t.Error("ids outside the vocabulary do not decode to U+FFFD")
	}
}

// TestGeneratedTextTokenCount: any sequence of generated words tokenises
// back to one token per word, so a client re-tokenising generated text
// counts what the server sent.
func TestGeneratedTextTokenCount(t *testing.T) {
	tok := NewMockTokenizer()
	for salt := uint64(0); salt < 200; salt++ {
		st := &stream{wordSalt: mix(1, salt, saltWords)}
		var b strings.Builder
		for k := 0; k < 50; k++ {
			b.WriteString(st.word(k))
		}
		if n := len(tok.Encode(nil, b.String(), false)); n != 50 {
			t.Fatalf("%q is %d tokens, want 50", b.String(), n)
		}
	}
}

func FuzzMockTokenizerRoundTrip(f *testing.F) {
	for _, s := range []string{"", " the there then", "héllo\x00\xff", "  of  "} {
		f.Add(s)
	}
	tok := NewMockTokenizer()
	f.Fuzz(func(t *testing.T, s string) {
		if back := tok.Decode(tok.Encode(nil, s, true), true); back != s {
			t.Fatalf("Decode(Encode(%q)) = %q", s, back)
		}
	})
}
