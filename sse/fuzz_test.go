package sse

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// FuzzSSEParser checks that events do not depend on how the body is split
// into reads, and that no input panics the parser. Seeds: every parser table
// case here, plus the golden vLLM streams in testdata/fuzz/FuzzSSEParser.
func FuzzSSEParser(f *testing.F) {
	for i, tc := range parserCases {
		f.Add([]byte(tc.in), uint64(i))
	}
	f.Fuzz(func(t *testing.T, stream []byte, cutSeed uint64) {
		whole, wholeComments, wholeErr := feedSplit(t, stream, nil)
		if wholeErr != nil {
			t.Fatalf("whole body: %v", wholeErr)
		}
		for _, ev := range whole {
			if strings.IndexByte(ev.data, '\r') >= 0 || strings.ContainsAny(ev.name+ev.id, "\r\n") {
				t.Fatalf("a line ending leaked into event %v", ev)
			}
		}
		rng := rand.New(rand.NewPCG(cutSeed, cutSeed>>32))
		splits := [][]int{randomCuts(rng, len(stream))}
		if len(stream) <= 256 { // byte by byte; random cuts cover longer inputs
			every := make([]int, 0, len(stream))
			for c := 1; c < len(stream); c++ {
				every = append(every, c)
			}
			splits = append(splits, every)
		}
		for _, cuts := range splits {
			got, comments, err := feedSplit(t, stream, cuts)
			if err != nil || comments != wholeComments || !slices.Equal(got, whole) {
				t.Fatalf("split at %v: %v events, %d comments, err %v; whole body: %v events, %d comments", cuts, got, comments, err, whole, wholeComments)
			}
		}
	})
}

// FuzzDecoder checks Decode against encoding/json: it never panics, accepts
// only what a strict JSON parser accepts, and never reports a token event
// unless "choices" is a non-empty list. Seeds: every decoder table case here,
// plus the first chunk of each golden stream in testdata/fuzz/FuzzDecoder.
func FuzzDecoder(f *testing.F) {
	for _, tc := range decoderCases {
		f.Add([]byte(tc.data), tc.kind != Completions)
	}
	d := [2]*Decoder{NewDecoder(Completions), NewDecoder(Chat)}
	f.Fuzz(func(t *testing.T, data []byte, chat bool) {
		dec := d[0]
		if chat {
			dec = d[1]
		}
		var c Chunk
		err := dec.Decode(data, &c)

		var again Chunk
		err2 := dec.Decode(data, &again)
		if (err == nil) != (err2 == nil) || c.Token != again.Token || c.Done != again.Done || c.HasUsage != again.HasUsage {
			t.Fatalf("decoding twice differs: %+v, %v then %+v, %v", c, err, again, err2)
		}

		trimmed := bytes.TrimSpace(data)
		if string(trimmed) == "[DONE]" {
			if err != nil || !c.Done {
				t.Fatalf("[DONE] decoded to %+v, %v", c, err)
			}
			return
		}
		valid := utf8.Valid(trimmed) && json.Valid(trimmed)
		if err != nil {
			if !errors.Is(err, ErrMalformedChunk) {
				t.Fatalf("error %v does not wrap ErrMalformedChunk", err)
			}
			if valid && strings.Contains(err.Error(), "invalid JSON") && nesting(trimmed) < fastjson.MaxDepth {
				t.Fatalf("rejected JSON that encoding/json accepts: %v", err)
			}
			return
		}
		if !valid {
			t.Fatalf("accepted %q, which is not strict JSON in UTF-8", data)
		}
		if c.Done {
			t.Fatalf("Done for %q", data)
		}
		var m map[string]any
		dj := json.NewDecoder(bytes.NewReader(trimmed))
		dj.UseNumber()
		if err := dj.Decode(&m); err != nil {
			t.Fatalf("accepted a chunk that is not a JSON object: %v", err)
		}
		choices, isList := m["choices"].([]any)
		if c.Token != (isList && len(choices) > 0) {
			t.Fatalf("Token = %v for choices %#v", c.Token, m["choices"])
		}
		checkRunning(t, &c, m)
		if !c.Token || chat || bytes.Contains(trimmed, []byte(`\u`)) {
			return
		}
		first, _ := choices[0].(map[string]any)
		if text, ok := first["text"].(string); ok && text != string(c.Text) {
			t.Fatalf("Text = %q, encoding/json reads %q", c.Text, text)
		}
	})
}

// nesting returns the deepest bracket nesting of JSON text, strings skipped.
func nesting(b []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}
