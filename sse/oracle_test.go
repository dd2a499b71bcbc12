package sse

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// The Decoder's former two-pass path, kept as the oracle its one-pass scan
// must agree with: a strict lexical check (checkLexemes), then fastjson's
// parser for the structure and the fields.

// oracleDecoder is the former Decoder.
type oracleDecoder struct {
	kind   Kind
	json   fastjson.Parser
	errBuf []byte
}

func (d *oracleDecoder) Decode(data []byte, out *Chunk) error {
	*out = Chunk{PromptTokens: -1, CompletionTokens: -1, RunningCompletionTokens: -1}
	data = bytes.TrimSpace(data)
	if string(data) == "[DONE]" {
		out.Done = true
		return nil
	}
	if !utf8.Valid(data) {
		return fmt.Errorf("%w: not valid UTF-8", ErrMalformedChunk)
	}
	if err := checkLexemes(data); err != nil {
		return fmt.Errorf("%w: invalid JSON: %v", ErrMalformedChunk, err)
	}
	v, err := d.json.ParseBytes(data)
	if err != nil {
		return fmt.Errorf("%w: invalid JSON: %v", ErrMalformedChunk, err)
	}
	obj, err := v.Object()
	if err != nil {
		return fmt.Errorf("%w: chunk is a JSON %s, not an object", ErrMalformedChunk, v.Type())
	}
	if choices := LastField(obj, "choices"); truthy(choices) {
		if err := d.decodeToken(choices, out); err != nil {
			return err
		}
		out.Token = true
		// The running usage of continuous_usage_stats, which Python
		// never reads.
		if usage := LastField(obj, "usage"); usage != nil && usage.Type() == fastjson.TypeObject {
			u, _ := usage.Object()
			out.RunningCompletionTokens = count(LastField(u, "completion_tokens"))
		}
		return nil
	}
	if usage := LastField(obj, "usage"); truthy(usage) {
		u, err := usage.Object()
		if err != nil {
			return fmt.Errorf("%w: \"usage\" is a JSON %s, not an object", ErrMalformedChunk, usage.Type())
		}
		out.HasUsage = true
		if d.kind != Audio {
			out.PromptTokens = count(LastField(u, "prompt_tokens"))
		}
		out.CompletionTokens = count(LastField(u, "completion_tokens"))
	}
	out.ErrMessage = d.errorMessage(obj)
	return nil
}

func (d *oracleDecoder) decodeToken(choices *fastjson.Value, out *Chunk) error {
	list, err := choices.Array()
	if err != nil {
		return fmt.Errorf("%w: \"choices\" is a JSON %s, not a list", ErrMalformedChunk, choices.Type())
	}
	first, err := list[0].Object()
	if err != nil {
		return fmt.Errorf("%w: choices[0] is a JSON %s, not an object", ErrMalformedChunk, list[0].Type())
	}
	var text *fastjson.Value
	switch d.kind {
	case Chat, Audio:
		delta := LastField(first, "delta")
		if delta == nil {
			return fmt.Errorf("%w: chat chunk has no \"delta\" in choices[0]", ErrMalformedChunk)
		}
		do, err := delta.Object()
		if err != nil {
			return fmt.Errorf("%w: choices[0].delta is a JSON %s, not an object", ErrMalformedChunk, delta.Type())
		}
		text = LastField(do, "content")
	default:
		text = LastField(first, "text")
	}
	if text == nil {
		return nil
	}
	if text.Type() == fastjson.TypeString {
		out.Text, _ = text.StringBytes()
		return nil
	}
	if truthy(text) {
		return fmt.Errorf("%w: token text is a JSON %s, not a string", ErrMalformedChunk, text.Type())
	}
	return nil
}

func (d *oracleDecoder) errorMessage(obj *fastjson.Object) []byte {
	holder := obj
	switch e := LastField(obj, "error"); {
	case e != nil && e.Type() == fastjson.TypeObject:
		holder, _ = e.Object()
	case e != nil && e.Type() == fastjson.TypeString:
		if msg, _ := e.StringBytes(); len(msg) > 0 {
			return msg
		}
		return nil
	default:
		o := LastField(obj, "object")
		if o == nil || o.Type() != fastjson.TypeString {
			return nil
		}
		if s, _ := o.StringBytes(); string(s) != "error" {
			return nil
		}
	}
	if m := LastField(holder, "message"); m != nil && m.Type() == fastjson.TypeString {
		if msg, _ := m.StringBytes(); len(msg) > 0 {
			return msg
		}
	}
	d.errBuf = holder.MarshalTo(d.errBuf[:0])
	return d.errBuf
}

// checkLexemes reports the first lexical error in JSON text b: what a strict
// parser such as Python's json.loads rejects but fastjson's parser lets
// through. fastjson checks the structure (brackets, commas, colons, the
// literals true, false and null) and the Decoder relies on it for that; it
// takes a string's content and any run of number characters as they come.
// So this one pass checks exactly the rest: strings hold no control
// characters and only valid escapes, numbers follow the JSON grammar and are
// not followed by more number characters, and nothing outside strings is
// anything but a structural character, whitespace, a number or a literal
// (no NaN or Infinity).
//
// A flat scan, it costs less than fastjson.Validate, which walks the whole
// structure a second time, and it catches what Validate misses: a control
// character that precedes an escape sequence in the same string.
func checkLexemes(b []byte) error {
	for i := 0; i < len(b); {
		switch c := b[i]; c {
		case ' ', '\t', '\n', '\r', '{', '}', '[', ']', ',', ':':
			i++
		case '"':
			end, err := scanString(b, i+1)
			if err != nil {
				return err
			}
			i = end
		case 't':
			i += literalLen(b[i:], "true")
		case 'f':
			i += literalLen(b[i:], "false")
		case 'n':
			i += literalLen(b[i:], "null")
		default:
			end, ok := scanNumber(b, i)
			if !ok {
				return fmt.Errorf("unexpected %q at offset %d", c, i)
			}
			i = end
		}
	}
	return nil
}

// literalLen returns len(lit) when b starts with it, else 1, so the rest of
// a broken literal is checked byte by byte ("nan", which fastjson would take
// for a number, fails at the 'a'); what passes, such as a lone 't' before a
// quote, fastjson's parser rejects.
func literalLen(b []byte, lit string) int {
	if len(b) >= len(lit) && string(b[:len(lit)]) == lit {
		return len(lit)
	}
	return 1
}

// plainStringByte marks the bytes a string may hold as they are: all but
// control characters, the quote and the backslash.
var plainStringByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString checks a string whose opening quote precedes b[i] and returns
// the index after its closing quote.
func scanString(b []byte, i int) (int, error) {
	for {
		for i < len(b) && plainStringByte[b[i]] {
			i++
		}
		if i == len(b) {
			return 0, fmt.Errorf("unterminated string")
		}
		switch c := b[i]; c {
		case '"':
			return i + 1, nil
		case '\\':
			n, ok := escapeLen(b[i:])
			if !ok {
				return 0, fmt.Errorf("invalid escape %q in a string at offset %d", b[i:min(i+6, len(b))], i)
			}
			i += n
		default:
			return 0, fmt.Errorf("control character %#02x in a string at offset %d", c, i)
		}
	}
}
