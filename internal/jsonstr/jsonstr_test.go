package jsonstr

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

func TestAppend(t *testing.T) {
	const (
		std  = Flags(0)
		keep = KeepInvalidUTF8
		fast = FastjsonSurrogates | KeepInvalidUTF8
	)
	tests := []struct {
		name    string
		content string
		flags   Flags
		want    string
		err     error
		offset  int
	}{
		{"plain", "hello", std, "hello", nil, 0},
		{"empty", "", std, "", nil, 0},
		{"short escapes", `a\"b\\c\/d\be\ff\ng\rh\ti`, std, "a\"b\\c/d\be\ff\ng\rh\ti", nil, 0},
		{"unicode escape", `caf\u00e9 \u20AC`, std, "café €", nil, 0},
		{"multi-byte UTF-8 kept", "café ☃", std, "café ☃", nil, 0},
		{"surrogate pair", `\ud83d\ude00`, std, "😀", nil, 0},
		{"surrogate pair fastjson", `\ud83d\ude00`, fast, "😀", nil, 0},
		{"lone high surrogate", `\ud83dx`, std, "\uFFFDx", nil, 0},
		{"lone high surrogate at the end", `\ud83d`, std, "\uFFFD", nil, 0},
		{"lone high surrogate fastjson", `\ud83dx`, fast, `\ud83dx`, nil, 0},
		{"lone low surrogate", `\ude00`, std, "\uFFFD", nil, 0},
		{"lone low surrogate fastjson", `\ude00`, fast, `\ude00`, nil, 0},
		{"unpaired surrogates", `\ud83d\u0041`, std, "\uFFFDA", nil, 0},
		{"unpaired surrogates fastjson", `\ud83d\u0041`, fast, "\uFFFD", nil, 0},
		{"two high surrogates", `\ud83d\ud83d\ude00`, std, "\uFFFD😀", nil, 0},
		{"invalid UTF-8 replaced", "a\xffb", std, "a\uFFFDb", nil, 0},
		{"truncated UTF-8 replaced", "a\xe2\x98", std, "a\uFFFD\uFFFD", nil, 0},
		{"invalid UTF-8 kept", "a\xffb", keep, "a\xffb", nil, 0},
		{"control character", "ab\ncd", std, "ab", ErrControl, 2},
		{"control character kept mode", "ab\x1fcd", keep, "ab", ErrControl, 2},
		{"bad escape", `ab\x`, std, "ab", ErrEscape, 2},
		{"backslash at the end", `ab\`, std, "ab", ErrUnterminated, 2},
		{"short unicode escape", `ab\u12`, std, "ab", ErrUnicodeEscape, 2},
		{"bad hex", `\u12g4`, std, "", ErrUnicodeEscape, 0},
		{"bad hex after a surrogate fastjson", `\ud83d\u12g4`, fast, "", ErrUnicodeEscape, 6},
		{"bad hex after a surrogate", `\ud83d\u12g4`, std, "\uFFFD", ErrUnicodeEscape, 6},
		{"bare quote", `a"b`, std, "a", ErrQuote, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, kind := range []string{"string", "[]byte"} {
				var got []byte
				var err error
				if kind == "string" {
					got, err = Append([]byte(">"), tt.content, tt.flags)
				} else {
					got, err = Append([]byte(">"), []byte(tt.content), tt.flags)
				}
				if string(got) != ">"+tt.want {
					t.Errorf("%s: Append(%q) = %q, want %q", kind, tt.content, got[1:], tt.want)
				}
				var se *SyntaxError
				switch {
				case tt.err == nil && err != nil:
					t.Errorf("%s: Append(%q): %v", kind, tt.content, err)
				case tt.err != nil && !errors.Is(err, tt.err):
					t.Errorf("%s: Append(%q) error %v, want %v", kind, tt.content, err, tt.err)
				case tt.err != nil && errors.As(err, &se) && se.Offset != tt.offset:
					t.Errorf("%s: Append(%q) error at offset %d, want %d", kind, tt.content, se.Offset, tt.offset)
				}
			}
		})
	}
}

func TestAppendQuoted(t *testing.T) {
	tests := []struct {
		s    string // after the opening quote
		want string
		n    int
		err  error
	}{
		{`abc", 1]`, "abc", 4, nil},
		{`a\"b"x`, `a"b`, 5, nil},
		{`"`, "", 1, nil},
		{`\u00e9"`, "é", 7, nil},
		{`abc`, "abc", 3, ErrUnterminated},
		{`ab\"`, `ab"`, 4, ErrUnterminated},
		{"a\tb\"", "a", 1, ErrControl},
	}
	for _, tt := range tests {
		got, n, err := AppendQuoted(nil, tt.s, 0)
		if string(got) != tt.want || n != tt.n || !errors.Is(err, tt.err) {
			t.Errorf("AppendQuoted(%q) = %q, %d, %v; want %q, %d, %v", tt.s, got, n, err, tt.want, tt.n, tt.err)
		}
	}
}

// TestAppendAllocs checks that unescaping into a buffer with room allocates
// nothing: the stream decoder unescapes token text with it on every event.
func TestAppendAllocs(t *testing.T) {
	content := []byte(`Hello \"world\" \u00e9\ud83d\ude00 \n ☃ done`)
	dst := make([]byte, 0, 256)
	for _, f := range []Flags{0, KeepInvalidUTF8, FastjsonSurrogates | KeepInvalidUTF8} {
		if n := testing.AllocsPerRun(100, func() { dst, _ = Append(dst[:0], content, f) }); n != 0 {
			t.Errorf("flags %b: Append allocates %.0f times per call, want 0", f, n)
		}
	}
}

// FuzzAppend holds the default reading to encoding/json's and the
// FastjsonSurrogates reading to fastjson's, on the same contents: both
// accept a string or reject it together, and agree on its text.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{
		"", "plain", `a\"b\\c\/\b\f\n\r\t`, `\u00e9\u20ac`, `\ud83d\ude00`, `\ud83d`, `\ude00x`,
		`\ud83d\u0041`, `\ud83d\ud83d\ude00`, "a\xffb", "\xe2\x98", "ctl\x01", `bad\x`, `\u12`, `\`,
		`q"q`, "café ☃", `\uD83D\uDE00`, `\u0000`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, content string) { checkAgainstDecoders(t, content) })
}

// checkAgainstDecoders is FuzzAppend's check of one content.
func checkAgainstDecoders(t *testing.T, content string) {
	t.Helper()
	got, err := Append(nil, content, 0)
	var want string
	wantErr := json.Unmarshal([]byte(`"`+content+`"`), &want)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("Append(%q): error %v, encoding/json's %v", content, err, wantErr)
	}
	if err == nil && string(got) != want {
		t.Fatalf("Append(%q) = %q, encoding/json reads %q", content, got, want)
	}
	gotBytes, errBytes := Append(nil, []byte(content), 0)
	if string(gotBytes) != string(got) || (errBytes == nil) != (err == nil) {
		t.Fatalf("Append(%q) reads %q, %v from a string but %q, %v from bytes", content, got, err, gotBytes, errBytes)
	}
	quoted, n, qerr := AppendQuoted(nil, content+`"`, 0)
	if err == nil && (qerr != nil || string(quoted) != string(got) || n != len(content)+1) {
		t.Fatalf("AppendQuoted(%q) = %q, %d, %v; Append reads %q", content+`"`, quoted, n, qerr, got)
	}
	if err != nil || !utf8.ValidString(content) {
		return // fastjson does not check the grammar; it reads valid strings only as JSON does
	}
	fast, err := Append(nil, content, FastjsonSurrogates|KeepInvalidUTF8)
	if err != nil {
		t.Fatalf("Append(%q, FastjsonSurrogates): %v, though encoding/json reads it", content, err)
	}
	v, perr := fastjson.Parse(`"` + content + `"`)
	if perr != nil {
		t.Fatalf("fastjson.Parse(%q): %v", content, perr)
	}
	if string(fast) != string(v.GetStringBytes()) {
		t.Fatalf("Append(%q, FastjsonSurrogates) = %q, fastjson reads %q", content, fast, v.GetStringBytes())
	}
}

func BenchmarkAppend(b *testing.B) {
	for _, bc := range []struct {
		name    string
		content string
		flags   Flags
	}{
		{"token", ` the`, FastjsonSurrogates | KeepInvalidUTF8},
		{"escaped token", `\n\"quoted\"`, FastjsonSurrogates | KeepInvalidUTF8},
		{"unicode", `caf\u00e9 \ud83d\ude00 na\u00efve`, FastjsonSurrogates | KeepInvalidUTF8},
		{"text checked", "A paragraph of text, café ☃, with a line\\nbreak.", 0},
	} {
		b.Run(bc.name, func(b *testing.B) {
			content := []byte(bc.content)
			dst := make([]byte, 0, 256)
			b.ReportAllocs()
			b.SetBytes(int64(len(content)))
			for b.Loop() {
				dst, _ = Append(dst[:0], content, bc.flags)
			}
		})
	}
}
