package sse

import (
	"bytes"

	"github.com/valyala/fastjson"
)

// PoolingUsage says where a pooling answer's prompt token count comes
// from. Python's _run_pooling_request chooses by the request's own
// encoding_format (spec §b, "Non-streaming pooling"); a server that
// answers in another form than asked fails the request as it would there.
type PoolingUsage uint8

const (
	// UsageInBody ("float", "base64", anything else) reads the JSON body's
	// usage.prompt_tokens.
	UsageInBody PoolingUsage = iota
	// UsageInMetadata ("bytes") drains the binary body and reads usage from
	// the JSON in the "metadata" response header.
	UsageInMetadata
	// UsageFromRequest ("bytes_only") drains the binary body and takes the
	// request's own prompt length.
	UsageFromRequest
)

// MissingMetadataError is the failure text of a "bytes" answer without a
// metadata header: Python's str() of the KeyError it raises.
const MissingMetadataError = "'metadata'"

// PoolingAnswer is what a non-streaming pooling answer brought, as the
// transport collected it: the JSON body (for UsageInBody) or the
// "metadata" header (for UsageInMetadata).
type PoolingAnswer struct {
	Body        []byte
	Metadata    []byte
	HasMetadata bool
}

// PromptTokens is the answer's prompt token count by u: the request's own
// requestPromptLen (UsageFromRequest), or usage.prompt_tokens of the JSON
// in the metadata header or the body, parsed with p; -1 when the JSON has
// none. failure is the request's error text where Python's function
// raises.
func (a *PoolingAnswer) PromptTokens(p *fastjson.Parser, u PoolingUsage, requestPromptLen int) (prompt int64, failure string) {
	switch u {
	case UsageFromRequest:
		return int64(requestPromptLen), ""
	case UsageInMetadata:
		if !a.HasMetadata {
			return -1, MissingMetadataError
		}
		v, err := p.ParseBytes(a.Metadata)
		if err != nil {
			return -1, "malformed JSON in the metadata response header: " + err.Error()
		}
		return promptTokens(v)
	}
	v, err := p.ParseBytes(a.Body)
	if err != nil {
		return -1, "malformed JSON response body: " + err.Error()
	}
	return promptTokens(v)
}

// promptTokens is a pooling answer's usage.prompt_tokens, -1 when absent
// or not a number. Python reads it as answer.get("usage", {}).get(
// "prompt_tokens", 0), so an answer or a present usage that is not a JSON
// object fails the request with the AttributeError's text.
func promptTokens(answer *fastjson.Value) (prompt int64, failure string) {
	o, err := answer.Object()
	if err != nil {
		return -1, noGetError(answer)
	}
	usage := LastField(o, "usage")
	if usage == nil {
		return -1, ""
	}
	u, err := usage.Object()
	if err != nil {
		return -1, noGetError(usage)
	}
	if n := LastField(u, "prompt_tokens"); n != nil && n.Type() == fastjson.TypeNumber {
		return int64(n.GetFloat64()), ""
	}
	return -1, ""
}

// noGetError is Python's text for calling .get on a JSON value that is not
// an object: "'list' object has no attribute 'get'".
func noGetError(v *fastjson.Value) string {
	name := "NoneType"
	switch v.Type() {
	case fastjson.TypeArray:
		name = "list"
	case fastjson.TypeString:
		name = "str"
	case fastjson.TypeTrue, fastjson.TypeFalse:
		name = "bool"
	case fastjson.TypeNumber:
		name = "int"
		if bytes.ContainsAny(v.MarshalTo(nil), ".eE") {
			name = "float"
		}
	}
	return "'" + name + "' object has no attribute 'get'"
}
