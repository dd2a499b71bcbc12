package sse

import (
	"errors"
	"fmt"
	"unicode/utf8"
	"unsafe"

	"github.com/valyala/fastjson"
	"github.com/valyala/fastjson/fastfloat"

	"github.com/stampede-bench/stampede/internal/jsonstr"
)

// The Decoder reads a chunk in one scan that both validates it as strict
// JSON (what Python's json.loads accepts, bar NaN and Infinity, with
// fastjson's nesting limit) and keeps the few values a stream event needs.
// A value is kept as its type and the span of its raw text; only the values
// that decide the event are ever unescaped or converted.

// jsonType is a JSON value's type; its names are fastjson's, which the
// error messages have always used.
type jsonType uint8

const (
	jsonNone jsonType = iota // the key is absent
	jsonObject
	jsonArray
	jsonString
	jsonNumber
	jsonTrue
	jsonFalse
	jsonNull
)

var jsonTypeNames = [...]string{"none", "object", "array", "string", "number", "true", "false", "null"}

func (t jsonType) String() string { return jsonTypeNames[t] }

// jsonValue is what the scan keeps of one value.
type jsonValue struct {
	t     jsonType
	esc   bool // a string holds an escape sequence
	empty bool // an object or array has no members
	// The raw text: a string's content between its quotes, or the whole
	// value.
	start, end int
}

// role says which keys of an object value the scan keeps, and so where in
// the chunk the value sits.
type role uint8

const (
	roleNone    role = iota
	roleTop          // the chunk: "choices", "usage", "error", "object", "message"
	roleChoices      // "choices": its first element
	roleChoice       // choices[0]: "text", or "delta" for chat
	roleDelta        // choices[0].delta: "content"
	roleUsage        // "usage": "prompt_tokens", "completion_tokens"
	roleError        // "error": "message"
	// The roles of reasoning and tool calls (reasoning.go) and of the
	// Responses API's events (responses.go).
	roleUsageDetails // usage.completion_tokens_details / output_tokens_details: "reasoning_tokens"
	roleToolCalls    // choices[0].delta.tool_calls: each element
	roleToolCall     // an element of tool_calls: "id"
	roleResponse     // a Responses event's "response": "usage", "error"
	roleItem         // a Responses event's "item": "type"
	// The roles of the Anthropic Messages API's events (anthropic.go).
	roleMessage      // message_start's "message": "usage"
	roleContentBlock // content_block_start's "content_block": "type"
	roleBlockDelta   // content_block_delta's "delta": "type", "text", "thinking", "partial_json"
)

// fields are the values a scan keeps. Where a key repeats, its last
// occurrence wins: each occurrence resets what was kept inside the previous
// one.
type fields struct {
	top                jsonValue
	choices, first     jsonValue
	delta, text        jsonValue // text: choices[0].text, or choices[0].delta.content
	usage              jsonValue
	prompt, completion jsonValue
	errValue, errMsg   jsonValue // "error", and "message" inside an error object
	object, topMessage jsonValue // the legacy top-level error form

	extra     extraFields     // reasoning, tool calls, Responses events
	anthropic anthropicFields // Anthropic Messages events
}

// errTooDeep is fastjson's nesting limit, which the Decoder has always had.
var errTooDeep = fmt.Errorf("nesting exceeds %d levels", fastjson.MaxDepth)

// scan validates the chunk d.in and fills d.f, or returns the first error.
// The scanning methods return the offset after what they scanned, or -1
// after they set d.err.
func (d *Decoder) scan() error {
	d.f = fields{}
	d.err = nil
	i := d.value(0, 0, roleTop, &d.f.top)
	if i < 0 {
		return d.err
	}
	if i = d.skipSpace(i); i < len(d.in) {
		return fmt.Errorf("unexpected %q after the value at offset %d", d.in[i], i)
	}
	return nil
}

// fail records err and returns -1.
func (d *Decoder) fail(err error) int {
	d.err = err
	return -1
}

func (d *Decoder) skipSpace(i int) int {
	for i < len(d.in) {
		switch d.in[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// value scans the value at d.in[i], whose container sits at depth, into
// *out.
func (d *Decoder) value(i, depth int, r role, out *jsonValue) int {
	b := d.in
	if depth++; depth > fastjson.MaxDepth {
		return d.fail(errTooDeep)
	}
	if i == len(b) {
		return d.fail(errors.New("unexpected end of input"))
	}
	switch c := b[i]; c {
	case '{':
		return d.object(i, depth, r, out)
	case '[':
		return d.array(i, depth, r, out)
	case '"':
		end, esc := d.str(i + 1)
		*out = jsonValue{t: jsonString, esc: esc, start: i + 1, end: end - 1}
		return end
	case 't':
		return d.literal(i, "true", jsonTrue, out)
	case 'f':
		return d.literal(i, "false", jsonFalse, out)
	case 'n':
		return d.literal(i, "null", jsonNull, out)
	default:
		end, ok := scanNumber(b, i)
		if !ok {
			return d.fail(fmt.Errorf("unexpected %q at offset %d", c, i))
		}
		*out = jsonValue{t: jsonNumber, start: i, end: end}
		return end
	}
}

func (d *Decoder) literal(i int, lit string, t jsonType, out *jsonValue) int {
	end := i + len(lit)
	if end > len(d.in) || string(d.in[i:end]) != lit {
		return d.fail(fmt.Errorf("unexpected %q at offset %d", d.in[i], i))
	}
	*out = jsonValue{t: t, start: i, end: end}
	return end
}

func (d *Decoder) object(i, depth int, r role, out *jsonValue) int {
	b := d.in
	*out = jsonValue{t: jsonObject, start: i}
	i = d.skipSpace(i + 1)
	if i < len(b) && b[i] == '}' {
		out.empty, out.end = true, i+1
		return i + 1
	}
	for {
		if i == len(b) || b[i] != '"' {
			return d.fail(fmt.Errorf("expected a key string at offset %d", i))
		}
		end, esc := d.str(i + 1)
		if end < 0 {
			return end
		}
		slot, sub := &d.discard, roleNone
		if r != roleNone {
			if s, rs := d.slot(r, d.key(i+1, end-1, esc)); s != nil {
				slot, sub = s, rs
			}
		}
		if i = d.skipSpace(end); i == len(b) || b[i] != ':' {
			return d.fail(fmt.Errorf("expected ':' after a key at offset %d", i))
		}
		if i = d.value(d.skipSpace(i+1), depth, sub, slot); i < 0 {
			return i
		}
		if i = d.skipSpace(i); i == len(b) {
			return d.fail(errors.New("unterminated object"))
		}
		switch b[i] {
		case ',':
			i = d.skipSpace(i + 1)
		case '}':
			out.end = i + 1
			return i + 1
		default:
			return d.fail(fmt.Errorf("expected ',' or '}' at offset %d", i))
		}
	}
}

func (d *Decoder) array(i, depth int, r role, out *jsonValue) int {
	b := d.in
	*out = jsonValue{t: jsonArray, start: i}
	i = d.skipSpace(i + 1)
	if i < len(b) && b[i] == ']' {
		out.empty, out.end = true, i+1
		return i + 1
	}
	slot, sub := &d.discard, roleNone
	if r == roleChoices {
		slot, sub = &d.f.first, roleChoice
	}
	for {
		if r == roleToolCalls {
			slot, sub = d.toolCallSlot()
		}
		if i = d.value(i, depth, sub, slot); i < 0 {
			return i
		}
		if r == roleToolCalls {
			d.countToolCall()
		}
		slot, sub = &d.discard, roleNone
		if i = d.skipSpace(i); i == len(b) {
			return d.fail(errors.New("unterminated array"))
		}
		switch b[i] {
		case ',':
			i = d.skipSpace(i + 1)
		case ']':
			out.end = i + 1
			return i + 1
		default:
			return d.fail(fmt.Errorf("expected ',' or ']' at offset %d", i))
		}
	}
}

// slot returns where to keep the value of key in an object of role r, and
// the role of that value; nil when the key is not one the Decoder reads. A
// new occurrence of a key clears what the previous one held.
func (d *Decoder) slot(r role, key []byte) (*jsonValue, role) {
	if d.kind == Anthropic {
		// Its events share few keys with OpenAI's chunks, and "message"
		// and "delta" are objects there: one table of its own.
		return d.anthropicSlot(r, key)
	}
	f := &d.f
	// The values beyond Python's are looked for only where they can be,
	// so a chunk's other keys cost what they always did.
	if r > roleError || d.kind == Responses && (r == roleTop || r == roleUsage) {
		if s, rs, ok := d.extraSlot(r, key); ok || r > roleError {
			return s, rs
		}
	}
	switch r {
	case roleTop:
		switch string(key) {
		case "choices":
			f.first, f.delta, f.text = jsonValue{}, jsonValue{}, jsonValue{}
			f.extra.resetDelta()
			return &f.choices, roleChoices
		case "usage":
			f.prompt, f.completion = jsonValue{}, jsonValue{}
			f.extra.reasoningTokens = jsonValue{}
			return &f.usage, roleUsage
		case "error":
			f.errMsg = jsonValue{}
			return &f.errValue, roleError
		case "object":
			return &f.object, roleNone
		case "message":
			return &f.topMessage, roleNone
		}
	case roleChoice:
		switch {
		case d.kind == Completions && string(key) == "text":
			return &f.text, roleNone
		case d.kind != Completions && string(key) == "delta":
			f.text = jsonValue{}
			f.extra.resetDelta()
			return &f.delta, roleDelta
		}
	case roleDelta:
		if string(key) == "content" {
			return &f.text, roleNone
		}
	case roleUsage:
		switch string(key) {
		case "prompt_tokens":
			return &f.prompt, roleNone
		case "completion_tokens":
			return &f.completion, roleNone
		}
	case roleError:
		if string(key) == "message" {
			return &f.errMsg, roleNone
		}
	}
	if r == roleDelta || r == roleUsage {
		s, rs, _ := d.extraSlot(r, key)
		return s, rs
	}
	return nil, roleNone
}

// key returns the text of the key d.in[start:end], unescaped when esc.
func (d *Decoder) key(start, end int, esc bool) []byte {
	if !esc {
		return d.in[start:end]
	}
	d.keyBuf = appendUnescaped(d.keyBuf[:0], d.in[start:end])
	return d.keyBuf
}

// stringByte marks the bytes a string holds as they are: printable ASCII but
// the quote and the backslash. Other bytes end the fast loop in str.
var stringByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str checks the string whose content starts at d.in[i] and returns the
// offset after its closing quote (or -1) and whether it holds an escape
// sequence.
// Beyond JSON's rules it checks that the content is valid UTF-8; elsewhere
// the grammar admits only ASCII, so a chunk that scans is valid UTF-8.
func (d *Decoder) str(i int) (end int, esc bool) {
	b := d.in
	for {
		for i < len(b) && stringByte[b[i]] {
			i++
		}
		if i == len(b) {
			return d.fail(errors.New("unterminated string")), esc
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, esc
		case c == '\\':
			n, ok := escapeLen(b[i:])
			if !ok {
				return d.fail(fmt.Errorf("invalid escape %q in a string at offset %d", b[i:min(i+6, len(b))], i)), esc
			}
			esc = true
			i += n
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return d.fail(fmt.Errorf("invalid UTF-8 in a string at offset %d", i)), esc
			}
			i += n
		default:
			return d.fail(fmt.Errorf("control character %#02x in a string at offset %d", c, i)), esc
		}
	}
}

// appendUnescaped appends the content of a valid JSON string, s, unescaped
// as fastjson unescapes it, so that text and keys read as they always have:
// a surrogate escape followed by another \u escape makes one rune of the
// pair (U+FFFD when they do not pair); one followed by anything else stays
// escaped, as it came. str has checked s, so there is no error to report.
func appendUnescaped(dst, s []byte) []byte {
	dst, _ = jsonstr.Append(dst, s, jsonstr.FastjsonSurrogates|jsonstr.KeepInvalidUTF8)
	return dst
}

// raw returns the raw text of v.
func (d *Decoder) raw(v *jsonValue) []byte { return d.in[v.start:v.end] }

// number returns the raw text of number v for fastfloat, without a copy:
// fastfloat keeps it only in an error message, which is dropped.
func (d *Decoder) number(v *jsonValue) string {
	b := d.raw(v)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// truthy is Python's bool() of a kept value; an absent one is falsy like the
// None that dict.get returns.
func (d *Decoder) truthy(v *jsonValue) bool {
	switch v.t {
	case jsonObject, jsonArray:
		return !v.empty
	case jsonString:
		return v.end > v.start // an escape never unescapes to nothing
	case jsonNumber:
		f, err := fastfloat.Parse(d.number(v))
		return err != nil || f != 0
	case jsonTrue:
		return true
	}
	return false
}

// count reads a token count; -1 stands for a missing, null or non-numeric
// field (Python would carry None, or the odd value, onwards).
func (d *Decoder) count(v *jsonValue) int64 {
	if v.t != jsonNumber {
		return -1
	}
	s := d.number(v)
	if n, err := fastfloat.ParseInt64(s); err == nil {
		return n
	}
	f, err := fastfloat.Parse(s)
	if err != nil {
		return -1
	}
	return int64(f)
}
