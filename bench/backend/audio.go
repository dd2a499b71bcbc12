package backend

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/internal/py"
)

// The openai-audio request body: async_request_openai_audio posts an
// aiohttp FormData, which aiohttp (3.x, multipart.py/payload.py/
// helpers.py) serialises as
//
//	--{boundary}\r\n
//	Content-Type: audio/wav\r\n
//	Content-Disposition: form-data; name="file"; filename="audio.wav"\r\n
//	\r\n
//	{WAV bytes}\r\n
//	--{boundary}\r\n
//	Content-Type: text/plain; charset=utf-8\r\n
//	Content-Disposition: form-data; name="model"\r\n
//	\r\n
//	{str(value)}\r\n
//	... one such part per payload key ...
//	--{boundary}--\r\n
//
// with the request's Content-Type "multipart/form-data; boundary={boundary}"
// and the boundary a fresh uuid4().hex per request. Each part's headers are
// Content-Type first (set when the payload object is made) and then
// Content-Disposition (set by FormData); no Content-Length.

// errNoAudio is Python's TypeError for a request that carries no clip
// (custom_audio without a tokenizer, or a text dataset): raised before the
// request is sent, it ends the run.
var errNoAudio = &py.Error{Type: "TypeError", Msg: "multi_modal_content must be a dict containing 'audio' or 'audio_path'"}

// errHeaderInjection is aiohttp's refusal of a control character in a form
// field's name, filename or content type.
var errHeaderInjection = &py.Error{Type: "ValueError", Msg: "Forbidden control character detected in headers. Potential header injection attack."}

// maxBoundaryLen is aiohttp's (and RFC 2046's) limit on a boundary.
const maxBoundaryLen = 70

// NewAudioBoundary returns a boundary as aiohttp's MultipartWriter makes
// one: uuid.uuid4().hex, 32 lowercase hex digits with the UUID version
// (4) and variant bits set.
func NewAudioBoundary() string {
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read never fails on Linux
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return hex.EncodeToString(u[:])
}

// BuildAudioRequest returns the Content-Type header and the body that
// Python's openai-audio request function posts for req with its clip:
// the file part, then the payload keys in dict order, each value as
// Python's str(value):
//
//	model, max_completion_tokens, stream=True, language=en,
//	stream_include_usage=True, stream_continuous_usage_stats=True,
//	ignore_eos=True (only with --ignore-eos), then {**extra_body,
//	**request overrides} as dict.update applies it (an existing key keeps
//	its place and takes the new value).
//
// Strings are sent as they are, true/false/null as True/False/None,
// numbers as Python prints them (1e3 → 1000.0), lists and objects as
// their Python repr ({'a': [1, 'x']}). req's prompt is not sent. boundary
// must be 1 to 70 token characters; NewAudioBoundary makes Python's kind.
// A request without a clip fails with Python's TypeError.
func BuildAudioRequest(req *datasets.Request, audio *datasets.Audio, p BodyParams, boundary string) (contentType string, body []byte, err error) {
	if audio == nil {
		return "", nil, errNoAudio
	}
	if err := checkBoundary(boundary); err != nil {
		return "", nil, err
	}
	fields, err := audioFormFields(req, p)
	if err != nil {
		return "", nil, err
	}
	if audio.ContentType == "" {
		return "", nil, fmt.Errorf("request %q: audio clip %q has no content type", req.RequestID, audio.Filename)
	}
	if hasControlChar(audio.ContentType) {
		return "", nil, errHeaderInjection
	}
	fileDisposition, err := formDataDisposition("file", audio.Filename, true)
	if err != nil {
		return "", nil, err
	}
	size := len(audio.WAV) + 2*len(boundary) + 200
	for _, f := range fields {
		size += len(f.name) + len(f.value) + len(boundary) + 100
	}
	var b bytes.Buffer
	b.Grow(size)
	writeFormPart(&b, boundary, audio.ContentType, fileDisposition, audio.WAV)
	for _, f := range fields {
		disposition, err := formDataDisposition(f.name, "", false)
		if err != nil {
			return "", nil, err
		}
		writeFormPart(&b, boundary, "text/plain; charset=utf-8", disposition, []byte(f.value))
	}
	b.WriteString("--")
	b.WriteString(boundary)
	b.WriteString("--\r\n")
	return "multipart/form-data; boundary=" + boundary, b.Bytes(), nil
}

// formField is one text field of the form.
type formField struct{ name, value string }

// audioFormFields is the payload dict of async_request_openai_audio after
// _update_payload_common, each value as str(value).
func audioFormFields(req *datasets.Request, p BodyParams) ([]formField, error) {
	var fields []formField
	set := func(name, value string) {
		for i := range fields {
			if fields[i].name == name {
				fields[i].value = value
				return
			}
		}
		fields = append(fields, formField{name, value})
	}
	set("model", p.SentModel())
	set("max_completion_tokens", strconv.Itoa(req.ExpectedOutputLen))
	set("stream", "True")
	set("language", "en")
	set("stream_include_usage", "True")
	set("stream_continuous_usage_stats", "True")
	if p.IgnoreEOS {
		set("ignore_eos", "True")
	}
	extra, err := p.extraBody(req)
	if err != nil {
		return nil, err
	}
	for key, value := range extra.All() {
		n, err := py.Loads(string(value))
		if err != nil {
			return nil, fmt.Errorf("extra body key %q: %w", key, err)
		}
		set(key, n.PyStr())
	}
	return fields, nil
}

// writeFormPart writes one multipart part and the CRLF that ends it.
func writeFormPart(b *bytes.Buffer, boundary, contentType, disposition string, content []byte) {
	b.WriteString("--")
	b.WriteString(boundary)
	b.WriteString("\r\nContent-Type: ")
	b.WriteString(contentType)
	b.WriteString("\r\nContent-Disposition: ")
	b.WriteString(disposition)
	b.WriteString("\r\n\r\n")
	b.Write(content)
	b.WriteString("\r\n")
}

// formDataDisposition is aiohttp's content_disposition_header("form-data",
// quote_fields=True, name=..., filename=...): the name in a quoted-string
// with space, '"' and '\' backslash-escaped; the filename percent-encoded
// inside quotes (urllib's quote(v, safe="")). A name that is not printable
// ASCII would become the RFC 5987 parameter name*, which aiohttp's
// multipart writer then rejects (it asserts "name=" in the header), so that
// every Python request fails; stampede refuses it up front instead.
func formDataDisposition(name, filename string, hasFilename bool) (string, error) {
	if hasControlChar(name) || hasFilename && hasControlChar(filename) {
		return "", errHeaderInjection
	}
	if !quotable(name) {
		return "", fmt.Errorf("form field name %q: aiohttp cannot send a field name that is not printable ASCII (its multipart writer fails every such request); rename the key", name)
	}
	var b strings.Builder
	b.WriteString(`form-data; name="`)
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !isQText(c) {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	b.WriteByte('"')
	if hasFilename {
		b.WriteString(`; filename="`)
		b.WriteString(percentQuote(filename))
		b.WriteByte('"')
	}
	return b.String(), nil
}

// hasControlChar is aiohttp's _safe_header test: any of 0x00-0x08,
// 0x0A-0x1F or 0x7F (tab is allowed).
func hasControlChar(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return true
		}
	}
	return false
}

// quotable reports whether every character is in aiohttp's QCONTENT
// (0x20-0x7E and tab), so quoted_string accepts it.
func quotable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 || c > 0x7e) && c != '\t' {
			return false
		}
	}
	return true
}

// isQText is RFC 5322 qtext as aiohttp's not_qtext_re negates it: 0x21,
// 0x23-0x5B, 0x5D-0x7E. Everything else gets a backslash in quoted_string.
func isQText(c byte) bool {
	return c == 0x21 || c >= 0x23 && c <= 0x5b || c >= 0x5d && c <= 0x7e
}

// percentQuote is urllib.parse.quote(s, safe=""): the UTF-8 bytes, with
// everything but letters, digits and "_.-~" as %XX (upper-case hex).
func percentQuote(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

// checkBoundary accepts what aiohttp sends unquoted: 1 to 70 RFC 7230
// token characters.
func checkBoundary(boundary string) error {
	if boundary == "" || len(boundary) > maxBoundaryLen {
		return fmt.Errorf("multipart boundary %q: want 1 to %d characters", boundary, maxBoundaryLen)
	}
	for i := 0; i < len(boundary); i++ {
		c := boundary[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return fmt.Errorf("multipart boundary %q: character %q is not a token character", boundary, c)
		}
	}
	return nil
}
