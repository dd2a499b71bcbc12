package sse

import (
	"bytes"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// What a failed answer's body says. Python reads no body of an answer
// other than 200 (its error is the reason phrase), so what the server
// wrote is stampede's own record: the message of a JSON error as OpenAI,
// vLLM, SGLang, TGI and llama.cpp word it, else the body's first bytes.

// MaxErrorMessage bounds the message kept of one error body, after
// escaping: enough for any server's sentence, while a server that answers
// a megabyte of HTML costs a failed request no more.
const MaxErrorMessage = 512

// MaxErrorBody is how many bytes of an error body are read for its
// message: a JSON error cut short cannot be parsed, and the messages
// servers send (with their type, param and code) fit well within it.
const MaxErrorBody = 4096

// ErrorBodyMessage appends to dst what an error body says: for a JSON
// object its error.message, a string error, message or detail (the first
// present, in that order; a detail that is not a string, as FastAPI's list
// of problems, as its JSON text), else the body itself with surrounding
// white space trimmed; either way escaped (control bytes and invalid UTF-8
// as \n, \t, \xNN) and cut to MaxErrorMessage bytes. It uses d's JSON
// parser, so it must not run while a Chunk of d is still in use.
func (d *Decoder) ErrorBodyMessage(dst, body []byte) []byte {
	body = bytes.TrimSpace(body)
	if msg := d.jsonErrorMessage(body); msg != nil {
		body = msg
	}
	return AppendEscaped(dst, body, MaxErrorMessage)
}

// jsonErrorMessage is the message of a JSON error body; nil when body is
// no JSON object or names none.
func (d *Decoder) jsonErrorMessage(body []byte) []byte {
	if len(body) == 0 || body[0] != '{' {
		return nil
	}
	v, err := d.json.ParseBytes(body)
	if err != nil {
		return nil
	}
	obj, _ := v.Object()
	if e := LastField(obj, "error"); e != nil {
		switch e.Type() {
		case fastjson.TypeString:
			if s, _ := e.StringBytes(); len(s) > 0 {
				return s
			}
		case fastjson.TypeObject:
			inner, _ := e.Object()
			if m := stringField(inner, "message"); m != nil {
				return m
			}
		}
	}
	if m := stringField(obj, "message"); m != nil {
		return m
	}
	if dv := LastField(obj, "detail"); dv != nil {
		if s, err := dv.StringBytes(); err == nil {
			if len(s) > 0 {
				return s
			}
			return nil
		}
		return dv.MarshalTo(nil)
	}
	return nil
}

// stringField is o's non-empty string field key, or nil.
func stringField(o *fastjson.Object, key string) []byte {
	v := LastField(o, key)
	if v == nil {
		return nil
	}
	s, err := v.StringBytes()
	if err != nil || len(s) == 0 {
		return nil
	}
	return s
}

// AppendEscaped appends b to dst with control bytes and invalid UTF-8
// escaped, stopping before the escaped text would pass limit bytes.
func AppendEscaped(dst, b []byte, limit int) []byte {
	start := len(dst)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		var piece []byte
		var esc [4]byte
		switch {
		case r == utf8.RuneError && size == 1:
			piece = hexEscape(esc[:0], b[0])
		case r == '\n':
			piece = append(esc[:0], '\\', 'n')
		case r == '\t':
			piece = append(esc[:0], '\\', 't')
		case r == '\r':
			piece = append(esc[:0], '\\', 'r')
		case r < 0x20 || r == 0x7f:
			piece = hexEscape(esc[:0], byte(r))
		default:
			piece = b[:size]
		}
		if len(dst)-start+len(piece) > limit {
			break
		}
		dst = append(dst, piece...)
		b = b[size:]
	}
	return dst
}

func hexEscape(dst []byte, c byte) []byte {
	const hex = "0123456789abcdef"
	return append(dst, '\\', 'x', hex[c>>4], hex[c&15])
}
