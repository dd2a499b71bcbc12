package sse

import (
	"strings"
	"testing"
	"unicode/utf8"
)

var errorBodyCases = []struct {
	name, body, want string
}{
	{"OpenAI and vLLM", `{"error":{"message":"The model ` + "`x`" + ` does not exist.","type":"NotFoundError","code":404}}`, "The model `x` does not exist."},
	{"a string error", `{"error":"Model not loaded"}`, "Model not loaded"},
	{"TGI's top-level message", `{"error_type":"validation","message":"Input validation error"}`, "Input validation error"},
	{"the older top-level error object", `{"object":"error","message":"too long","code":400}`, "too long"},
	{"FastAPI's detail string", `{"detail":"Not Found"}`, "Not Found"},
	{"FastAPI's detail list, as JSON", `{"detail":[{"loc":["body","prompt"],"msg":"field required"}]}`, `[{"loc":["body","prompt"],"msg":"field required"}]`},
	{"an error without a message falls to the top level", `{"error":{"code":1},"message":"outer"}`, "outer"},
	{"the last repeated key counts", `{"message":"first","message":"last"}`, "last"},
	{"unescaped JSON text", `{"message":"line\none\u0007"}`, `line\none\x07`},
	{"JSON with no message is its text", `{"status":"down"}`, `{"status":"down"}`},
	{"HTML", "  <html><body>502 Bad Gateway</body></html>\r\n", "<html><body>502 Bad Gateway</body></html>"},
	{"JSON cut short is its text", `{"error":{"message":"cut`, `{"error":{"message":"cut`},
	{"invalid UTF-8 and control bytes", "a\xffb\x00c\x7f\u00e9", `a\xffb\x00c\x7fé`},
	{"empty", "", ""},
}

func TestErrorBodyMessage(t *testing.T) {
	d := NewDecoder(Completions)
	for _, tt := range errorBodyCases {
		if got := string(d.ErrorBodyMessage(nil, []byte(tt.body))); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestErrorBodyMessageIsBounded(t *testing.T) {
	d := NewDecoder(Completions)
	for _, body := range []string{strings.Repeat("é", 1000), strings.Repeat("\x01", 1000), `{"message":"` + strings.Repeat("x", 5000) + `"}`} {
		got := d.ErrorBodyMessage(nil, []byte(body))
		if len(got) == 0 || len(got) > MaxErrorMessage || !utf8.Valid(got) {
			t.Errorf("%d bytes (valid UTF-8: %v), want 1..%d of valid UTF-8", len(got), utf8.Valid(got), MaxErrorMessage)
		}
	}
}

// FuzzErrorBodyMessage checks that any error body gives a bounded message
// of valid UTF-8 without control bytes, and appends to what dst held.
func FuzzErrorBodyMessage(f *testing.F) {
	for _, tt := range errorBodyCases {
		f.Add([]byte(tt.body))
	}
	d := NewDecoder(Chat)
	f.Fuzz(func(t *testing.T, body []byte) {
		got := d.ErrorBodyMessage([]byte("x"), body)
		if string(got[:1]) != "x" {
			t.Fatalf("dst's bytes were overwritten: %q", got)
		}
		msg := got[1:]
		if len(msg) > MaxErrorMessage || !utf8.Valid(msg) {
			t.Fatalf("message of %d bytes, valid UTF-8 %v: %q", len(msg), utf8.Valid(msg), msg)
		}
		for _, c := range msg {
			if c < 0x20 || c == 0x7f {
				t.Fatalf("control byte %#x in %q", c, msg)
			}
		}
	})
}
