package sse

import (
	"encoding/json"
	"testing"

	"github.com/valyala/fastjson"
)

// TestStrictJSON: checkLexemes plus fastjson's parser accept exactly what
// encoding/json (strict RFC 8259, like json.loads without its NaN and
// Infinity extension) accepts.
func TestStrictJSON(t *testing.T) {
	var p fastjson.Parser
	for _, doc := range strictJSONDocs {
		b := []byte(doc)
		err := checkLexemes(b)
		if err == nil {
			_, err = p.ParseBytes(b)
		}
		if want := json.Valid(b); (err == nil) != want {
			t.Errorf("%q: accepted = %v (err %v), encoding/json accepts = %v", doc, err == nil, err, want)
		}
	}
}

// strictJSONDocs probe the edges of strict JSON.
var strictJSONDocs = []string{
	// Numbers.
	`0`, `-0`, `7`, `-12`, `1.5`, `1e5`, `1E+5`, `1e-5`, `-0.0e0`, `12345678901234567890`,
	`01`, `-01`, `1.`, `.5`, `-`, `+1`, `1e`, `1e+`, `1.2.3`, `1-2`, `1ee5`, `0x10`, `--1`,
	`NaN`, `nan`, `Infinity`, `-Infinity`, `inf`, `-inf`,
	// Literals.
	`true`, `false`, `null`, `tru`, `nul`, `True`, `nulll`, `[true,false,null]`, `[truefalse]`, `[nan]`, `{"a":NaN}`, `[t"x"]`,
	// Strings.
	`""`, `"a"`, `"\""`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"\u00e9"`, `"\uD83D\uDE00"`, `"\ud800"`,
	`"\u12"`, `"\u12g4"`, `"\x41"`, `"\'"`, `"\`, `"abc`, "\"a\tb\"", "\"a\x00\"", "\"\x1f\\n\"",
	"\"\x7f\"", `"é"`,
	// Structure and whitespace.
	`{}`, `[]`, `{"a":1}`, `{"a":1,}`, `[1,]`, `{"a"}`, `{a:1}`, " \t\r\n[ 1 , 2 ]\n ",
	"[1\x0b]", "\xEF\xBB\xBF{}", `[1]/*c*/`, `{"a":[{"b":"\u0041"}]}`, `[1 2]`, `{"a":1 "b":2}`,
}
