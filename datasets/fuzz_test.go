package datasets

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// FuzzParseRangeRatio: any --random-range-ratio text is either rejected
// with an error or read as two numbers; a plain number applies to both.
func FuzzParseRangeRatio(f *testing.F) {
	for _, s := range []string{"0.0", "0.5", " 1_0e-1 ", "inf", "nan", `{"input": 0.1, "output": 0.2}`, `{"input": "0.3", "output": 1}`, `{"input": 1}`, `[1]`, `{`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRangeRatio(s)
		if err != nil {
			return
		}
		if s != "" && s[0] != '{' && !(r.Input == r.Output || (math.IsNaN(r.Input) && math.IsNaN(r.Output))) {
			t.Fatalf("ParseRangeRatio(%q) = %v: a single number must apply to both", s, r)
		}
	})
}

// FuzzLengthFix: the decode/re-encode loop ends for any token ids, and a
// finished fix's ids are its prompt's encoding.
func FuzzLengthFix(f *testing.F) {
	f.Add([]byte{1, 2, 3, 200, 255, 0, 7}, uint8(5))
	f.Add([]byte{0, 0, 0}, uint8(1))
	f.Add([]byte{0x80, 0x81, 0xc3}, uint8(9))
	tok := newBPETokenizer()
	f.Fuzz(func(t *testing.T, raw []byte, target uint8) {
		ids := make([]int32, len(raw))
		for i, b := range raw {
			ids[i] = int32(b) % int32(tok.VocabSize()+1)
		}
		fix := newLengthFix(ids, int(target))
		var seed int32
		draw := func(n int) ([]int32, error) {
			out := make([]int32, n)
			for i := range out {
				seed = (seed*1103515245 + 12345) & 0x7fffffff
				out[i] = seed % int32(tok.VocabSize())
			}
			return out, nil
		}
		if err := fix.finish(tok, draw); err != nil {
			t.Fatal(err)
		}
		if got := tok.Encode(nil, fix.prompt, false); !slices.Equal(got, fix.ids) {
			t.Fatalf("final ids %v are not the encoding %v of the final prompt %q", fix.ids, got, fix.prompt)
		}
		if fix.mismatch != len(fix.ids)-int(target) {
			t.Fatalf("mismatch %d, but %d ids for target %d", fix.mismatch, len(fix.ids), target)
		}
	})
}

// BenchmarkSampleRandom times the dataset with one and two tokenizer
// workers; the test BPE is deliberately simple (quadratic), so the time is
// nearly all tokenizer work, which is what the workers split.
func BenchmarkSampleRandom(b *testing.B) {
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			tok := newBPETokenizer()
			o := RandomOptions{Env: &Env{NumPrompts: 64, Workers: workers}, InputLen: 256, OutputLen: 16, RangeRatio: RangeRatio{0.1, 0.1}}
			b.ReportAllocs()
			for b.Loop() {
				tok.encodes.Clear()
				if _, err := SampleRandom(tok, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzJSONProblem: whatever bytes a file or a server holds, the
// description of encoding/json's complaint names no Go type and never
// panics (it slices the input at the parser's offset).
func FuzzJSONProblem(f *testing.F) {
	for _, s := range []string{`[1, 2]`, `{"prompt": `, "\n\nprompt: a", `{"data": {"id": 1}}`, `[{"conversations": [{"value": 1}]}]`, "", "\xff", `{"a":"\u00"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var models struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		var row map[string]json.RawMessage
		var list []json.RawMessage
		for _, dst := range []any{&models, &row, &list} {
			if err := json.Unmarshal(data, dst); err != nil {
				msg := JSONProblem(data, err, "a JSON object")
				if strings.Contains(msg, "Go ") || strings.Contains(msg, "json.RawMessage") || strings.Contains(msg, "struct {") {
					t.Errorf("%q: %s", data, msg)
				}
			}
		}
	})
}
