// Package sse parses Server-Sent Events incrementally and decodes the OpenAI
// streaming chunks that vLLM-compatible servers send inside them, and the
// typed events of the Responses API (responses.go) and of the Anthropic
// Messages API (anthropic.go).
//
// Parser turns body bytes (as httpwire hands them over, split anywhere) into
// events; the Decoder (one per caller) reads each chunk in a single scan that
// validates it as strict JSON and keeps only the values it needs, says
// whether the event is a token event under the rules of `vllm bench serve`
// and returns the text as bytes without allocating. The encoders serve the mock server.
//
// A shard drives them per read:
//
//	parser.Feed(body, handler)      // handler.OnEvent(ev) → decoder.Decode(ev.Data, &chunk)
//	...
//	parser.Flush(handler)           // at the end of the body
//
// # What counts as a token
//
// A token event is exactly what Python counts: an event whose data is a JSON
// object with a non-empty "choices" list. Its text is choices[0].text
// (completions) or choices[0].delta.content (chat); a null, missing or empty
// text is still a token event, so chat's first chunk
// {"delta":{"role":"assistant","content":""}} and chunks that carry only
// "reasoning_content" or "reasoning" count, as they do in Python. A chunk
// without a truthy "choices" but with a truthy "usage" object gives the
// server's prompt and completion token counts; usage inside a token chunk is
// ignored. Decode fails exactly where Python's request function raises:
// data that is not JSON, JSON that is not an object, a truthy "choices" that
// is not a list of objects, a chat token chunk without a "delta" object,
// token text that is truthy but not a string, a truthy "usage" that is not an
// object. Python does not stop at "[DONE]" (Decode reports it as Done); the
// request ends with the body.
//
// # Where this package differs from Python's stream assembler
//
// Python (vllm/benchmarks/lib/endpoint_request_func.py) does not parse SSE: it
// strips whitespace from every read, splits the text on "\n\n", strips each
// piece, skips pieces that start with ':', removes one "data: " prefix and
// hands the rest to json.loads. Parser implements the WHATWG SSE grammar
// instead, which agrees with Python on every stream vLLM, SGLang or TGI
// send, and differs as follows.
//
// More lenient, because the SSE specification allows it and a conforming
// server may send it:
//   - "data:" without the space: Python passes "data:{...}" to json.loads
//     and fails the request; we strip the optional single space only.
//   - "event:", "id:" and "retry:" lines: Python hands the whole multi-line
//     block to json.loads and fails; we parse them as fields.
//   - Several data lines in one event are joined with "\n" (Python fails on
//     the block; the joined text parses as JSON if the server split it
//     where JSON allows whitespace).
//   - CRLF and lone CR line endings: Python splits only on "\n\n" and finds
//     CRLF events only when a read happens to end exactly at one.
//   - A block that mixes a comment line with data: Python skips the whole
//     block because it starts with ':'; we drop the comment line and keep
//     the data. Comment-only blocks are skipped by both (Comments counts
//     them).
//   - Whitespace around "[DONE]" is ignored (Python needs exactly one space
//     after "data:").
//
// Stricter or more exact, because Python's shortcut loses data:
//   - Python strips whitespace from each read before assembling, so a read
//     boundary next to a space loses it: inside a JSON string the text
//     changes (" the" becomes "the"); between "data:" and the payload the
//     request fails on json.loads("data:{...}"), or, for the body's last
//     event, which then never starts with "data: ", the event (often the
//     usage chunk) is silently dropped. We keep every byte. The tests replay
//     Python's assembler on the golden streams to check that, apart from
//     these cases, both count the same token events and usage.
//   - Python emits an event as soon as the buffered text after the last
//     "\n\n" starts with "data: " and parses as JSON, before its blank line
//     arrives; we wait for the blank line (normally in the same read). At the
//     end of the body both deliver such a trailing event: Flush marks it
//     Unterminated so a caller can ignore a decoding error there, as Python
//     drops an unterminated payload that is not JSON.
//   - An event block larger than MaxEventBytes fails the request; Python
//     buffers without limit.
//
// Equivalent, noted for exactness: data must be valid UTF-8 (Python decodes
// the body strictly) and strict JSON (control characters in strings and
// invalid escapes fail, as in json.loads). Python's json.loads additionally
// accepts NaN, Infinity and -Infinity, which vLLM never emits in a stream
// chunk; we reject them. Repeated keys resolve to the last occurrence, as in
// a Python dict. Invalid UTF-8 outside event data (in a comment, say) fails a
// Python request but not ours.
package sse
