package shard

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/stampede-bench/stampede/httpwire"
	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/sse"
	"github.com/valyala/fastjson"
)

// Response is one benchmark request's answer as it arrives: the parse state
// (HTTP framing, SSE events, OpenAI chunks) and the handler of its bytes,
// recording into the request's metrics.Stream by spec §b's rules — token
// events give TTFT and latency, usage counts, a non-200 status fails on its
// reason phrase, as Python's error, with the message of the body bytes
// that came with the head kept beside it. The shard loops, the TLS
// transport and the probe loop in bench all read responses through it.
// Parsing a read calls straight back into it without any allocation; only
// the goroutine that owns it may touch it.
//
// The fields every token event touches come first and the ones only a
// head, a pooling answer or a failure needs come last, so that a read
// touches as few of a connection's cache lines as it can: with 10,000
// streams they are rarely still cached from the event before.
type Response struct {
	decoder   *sse.Decoder
	streaming bool // false for the non-streaming pooling backends

	status    int // response status code, 0 until the head arrived
	keepAlive bool
	// keepAliveMax is the head's Keep-Alive max (0: none given).
	keepAliveMax int64
	done         bool  // the response body ended
	bodyTs       int64 // receive time of the read being parsed
	handlerErr   error // first error raised inside a parser callback
	stream       metrics.Stream

	// maxBytes bounds the bytes of one answer (0: no bound); received
	// counts them. budget is the run's memory budget for unparsed bytes,
	// of which this answer holds held.
	maxBytes int64
	received int64
	budget   *Budget
	held     int64

	http httpwire.Parser
	sse  sse.Parser

	reason []byte
	// What a failed answer said: the first MaxErrorBody bytes of a
	// non-200 body, a redirect's Location, a 200's Content-Encoding, and
	// the message made of them.
	errBody  []byte
	location []byte
	encoding []byte
	message  []byte

	// A pooling answer's body and "metadata" header, and the request's
	// own facts it needs (SetPoolingUsage).
	pooled           sse.PoolingAnswer
	pooling          sse.PoolingUsage
	requestPromptLen int
}

var (
	_ httpwire.Handler = (*Response)(nil)
	_ sse.EventHandler = (*Response)(nil)
)

// ErrClosedByPeer is the server closing the connection before the
// response was complete.
var ErrClosedByPeer = errors.New("connection closed by server")

// Init sets the chunk decoder (one per goroutine) and whether the answers
// are SSE streams.
func (r *Response) Init(decoder *sse.Decoder, streaming bool) {
	r.decoder, r.streaming = decoder, streaming
}

// SetLimits bounds each answer to maxBytes bytes (0: no bound) and charges
// the bytes it holds unparsed to budget (nil: no budget).
func (r *Response) SetLimits(maxBytes int64, budget *Budget) {
	r.maxBytes, r.budget = maxBytes, budget
}

// Stream is the request's recording state.
func (r *Response) Stream() *metrics.Stream { return &r.stream }

// KeepAlive reports whether the connection may carry another request;
// valid once Consume said the response ended well.
func (r *Response) KeepAlive() bool { return r.keepAlive }

// KeepAliveMax is the most responses the server said it sends on the
// connection (its Keep-Alive header's max), 0 when it did not say; valid
// as KeepAlive is.
func (r *Response) KeepAliveMax() int64 { return r.keepAliveMax }

// OnHead implements httpwire.Handler.
func (r *Response) OnHead(h *httpwire.Head, tsNs int64) {
	r.status = h.StatusCode
	if h.StatusCode != 200 {
		// The reason is only ever the failure text of a non-200 answer;
		// not copying "OK" saves each new connection an allocation.
		r.reason = append(r.reason[:0], h.Reason...)
	}
	r.keepAlive = h.KeepAlive
	r.keepAliveMax = h.KeepAliveMax
	r.stream.Answered(h.StatusCode, nil)
	if h.StatusCode >= 300 && h.StatusCode < 400 {
		r.location = append(r.location[:0], h.Header("location")...)
	}
	if ce := h.Header("content-encoding"); h.StatusCode == 200 && len(ce) > 0 && !equalFoldASCII(ce, "identity") {
		r.encoding = append(r.encoding[:0], ce...)
	}
	if h.StatusCode == 200 && !r.streaming && r.pooling == sse.UsageInMetadata {
		v := h.Header("metadata")
		r.pooled.Metadata, r.pooled.HasMetadata = append(r.pooled.Metadata[:0], v...), v != nil
	}
}

// OnBody implements httpwire.Handler: body bytes go to the SSE parser for
// streams, into the body buffer for pooling responses with a JSON body,
// nowhere for a binary pooling body, and for a non-200 response (which
// fails on its status, as in Python) into the error body, up to
// sse.MaxErrorBody bytes.
func (r *Response) OnBody(b []byte, tsNs int64) {
	if r.status != 200 {
		n := min(len(b), sse.MaxErrorBody-len(r.errBody))
		r.errBody = append(r.errBody, b[:n]...)
		return
	}
	if r.handlerErr != nil || r.encoding != nil {
		return
	}
	if !r.streaming {
		if r.pooling == sse.UsageInBody {
			r.pooled.Body = append(r.pooled.Body, b...)
		}
		return
	}
	r.bodyTs = tsNs
	if err := r.sse.Feed(b, r); err != nil {
		r.handlerErr = err
	}
}

// OnEnd implements httpwire.Handler.
func (r *Response) OnEnd(tsNs int64) {
	r.done = true
	r.bodyTs = tsNs
}

// OnEvent implements sse.EventHandler: one SSE event is one OpenAI chunk.
func (r *Response) OnEvent(ev *sse.Event) error {
	// The chunk lives on the stack: kept in the Response, its 112 bytes
	// were two more cold cache lines written per event at 10,000 streams.
	var chunk sse.Chunk
	if err := r.decoder.DecodeEvent(ev, &chunk); err != nil {
		if ev.Unterminated {
			// Python drops a trailing unterminated piece that is not JSON.
			return nil
		}
		return err
	}
	switch {
	case chunk.Done:
	case chunk.Token:
		r.stream.Token(r.bodyTs, chunk.Text)
		r.stream.RunningUsage(chunk.RunningCompletionTokens)
	case chunk.HasUsage:
		r.stream.Usage(chunk.PromptTokens, chunk.CompletionTokens)
	}
	switch {
	case !chunk.CompletionGiven:
	case chunk.Token:
		r.stream.ServedTokens(chunk.RunningCompletionTokens, true)
	case chunk.HasUsage:
		r.stream.ServedTokens(chunk.CompletionTokens, false)
	}
	recordReasoning(&r.stream, r.bodyTs, &chunk)
	if chunk.ErrMessage != nil {
		// Python passes over the chunk; the count tells the user why the
		// requests it left without a token failed, and the message is the
		// request's own if it fails.
		r.stream.ServerMessage(chunk.ErrMessage)
		r.message = appendMessage(r.message[:0], chunk.ErrMessage)
		r.stream.Answered(r.status, r.message)
	}
	return nil
}

// Reset clears what a response left, for the next request on the same
// connection or the same request sent again on a fresh one. The stream is
// the caller's to begin.
func (r *Response) Reset() {
	r.giveBack()
	r.received = 0
	r.status = 0
	r.reason = r.reason[:0]
	r.errBody, r.location, r.encoding = r.errBody[:0], r.location[:0], nil
	r.keepAlive = false
	r.keepAliveMax = 0
	r.done = false
	r.handlerErr = nil
	r.pooled.Body = r.pooled.Body[:0]
	r.pooled.Metadata, r.pooled.HasMetadata = r.pooled.Metadata[:0], false
	r.http.Reset(false)
	r.sse.Reset()
}

// Consume parses the next bytes of the answer, received at tsNs, and says
// whether the request is decided: failed (failure is its error text — a
// protocol error, a malformed chunk, or the reason phrase of a status other
// than 200), or ended well (ok; KeepAlive then says whether the connection
// may be reused: bytes after the answer belong to no request). used is how
// many bytes of b the answer took.
func (r *Response) Consume(b []byte, tsNs int64) (used int, failure string, ok, decided bool) {
	n := len(b)
	over := r.maxBytes > 0 && r.received+int64(n) > r.maxBytes
	if over {
		// Parse what the limit allows: an answer that ends within it is
		// still good.
		b = b[:r.maxBytes-r.received]
	}
	used, err := r.http.Feed(b, tsNs, r)
	r.received += int64(used)
	if err == nil {
		err = r.handlerErr
	}
	switch {
	case err != nil:
		r.giveBack()
		return used, r.FailureText(err), false, true
	case r.status != 0 && r.status != 200:
		// Decided on the read that carried the head, as Python fails at
		// the status: waiting for more of the body would let a server
		// that stalls after an error head hold the request.
		r.giveBack()
		return used, r.statusFailure(), false, true
	case r.encoding != nil:
		r.giveBack()
		return used, r.encodingFailure(), false, true
	case r.done:
		r.giveBack()
		r.keepAlive = used == n && r.http.KeepAlive()
		return used, "", true, true
	case over:
		r.giveBack()
		return used, "response exceeded --max-response-bytes (" + byteCount(r.maxBytes) + ") " + r.progressText(), false, true
	}
	if failure, ok := r.account(); !ok {
		return used, failure, false, true
	}
	return used, "", false, false
}

// account charges the budget with the change in the bytes this answer
// holds unparsed. It fails the answer if it grew while the total is over
// the limit; an answer that shrank or held still never fails.
func (r *Response) account() (failure string, ok bool) {
	if r.budget == nil {
		return "", true
	}
	held := int64(r.sse.Buffered() + len(r.pooled.Body))
	if held == r.held {
		return "", true
	}
	grew := held > r.held
	total, ok := r.budget.charge(held - r.held)
	r.held = held
	if ok || !grew {
		return "", true
	}
	what := "an unfinished SSE event"
	if !r.streaming {
		what = "an unfinished body"
	}
	failure = "response exceeded the memory budget for unparsed bytes (--max-buffered-bytes " + byteCount(r.budget.limit) +
		"): it held " + byteCount(held) + " of " + what + ", all requests in flight " + byteCount(total) + ", " + r.progressText()
	r.giveBack()
	return failure, false
}

// giveBack returns what the answer held to the budget; the request ended
// or starts over.
func (r *Response) giveBack() {
	if r.held != 0 {
		r.budget.charge(-r.held)
		r.held = 0
	}
}

// Closed decides the request when the server closed the connection at tsNs
// after some bytes of the answer: only a body framed by the close can still
// end well, and the connection is not reused.
func (r *Response) Closed(tsNs int64) (failure string, ok bool) {
	r.giveBack()
	err := r.http.CloseRead(tsNs, r)
	if err == nil {
		err = r.handlerErr
	}
	switch {
	case err != nil:
		return r.FailureText(err), false
	case r.status != 200:
		return r.statusFailure(), false
	case r.encoding != nil:
		return r.encodingFailure(), false
	case !r.done:
		return r.FailureText(ErrClosedByPeer), false
	}
	r.keepAlive = false
	return "", true
}

// SetPoolingUsage tells a pooling Response where the next answer's usage
// is and the request's own prompt length (for sse.UsageFromRequest). It holds
// until changed; streams ignore it.
func (r *Response) SetPoolingUsage(u sse.PoolingUsage, requestPromptLen int) {
	r.pooling, r.requestPromptLen = u, requestPromptLen
}

// End records an answer that ended well on rec: a stream succeeds iff a
// token event arrived (after its last unterminated event is flushed); a
// pooling answer takes its usage where SetPoolingUsage said (JSON parsed
// with p), and counts seqs inputs.
func (r *Response) End(rec *metrics.Recorder, p *fastjson.Parser, seqs int) {
	if r.streaming {
		if err := r.sse.Flush(r); err != nil {
			rec.Fail(&r.stream, r.FailureText(err))
		} else {
			rec.EndStream(&r.stream)
		}
		return
	}
	prompt, failure := r.pooled.PromptTokens(p, r.pooling, r.requestPromptLen)
	if failure != "" {
		rec.Fail(&r.stream, failure)
		return
	}
	r.stream.Usage(prompt, -1)
	rec.EndPooling(&r.stream, r.bodyTs, max(seqs, 1))
}

// statusFailure is the error text of an answer other than 200: its reason
// phrase, Python's `errors` entry, for any status but a redirect, which
// Python's client would have followed and stampede does not; the body's
// message goes to the request's record beside it.
func (r *Response) statusFailure() string {
	r.message = r.decoder.ErrorBodyMessage(r.message[:0], r.errBody)
	r.stream.Answered(r.status, r.message)
	if r.status < 300 || r.status >= 400 {
		return string(r.reason)
	}
	status := strconv.Itoa(r.status) + " " + string(r.reason)
	if len(r.location) == 0 {
		return "server answered " + status + " without a Location; stampede does not follow redirects"
	}
	return "server answered " + status + " to " + string(appendMessage(nil, r.location)) +
		"; point --base-url there (stampede does not follow redirects)"
}

// encodingFailure is the error text of a 200 whose body is compressed:
// stampede asks for none and decodes none.
func (r *Response) encodingFailure() string {
	return "server answered with Content-Encoding: " + string(appendMessage(nil, r.encoding)) +
		", which stampede does not decode (it sends no Accept-Encoding); make the server send the stream uncompressed"
}

// appendMessage appends a server's text to dst as an error text holds it:
// escaped and bounded.
func appendMessage(dst, text []byte) []byte {
	return sse.AppendEscaped(dst, text, sse.MaxErrorMessage)
}

// equalFoldASCII reports whether b is s, ignoring ASCII case.
func equalFoldASCII(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		if b[i]|0x20 != s[i]|0x20 {
			return false
		}
	}
	return true
}

// progressText describes how far the answer got, for error texts.
func (r *Response) progressText() string {
	if r.status == 0 {
		return "before the response head"
	}
	n := r.stream.TokenEvents()
	if n == 1 {
		return "after 1 token event"
	}
	return "after " + strconv.Itoa(n) + " token events"
}

// FailureText turns what ended a request early into its error text, saying
// how far the answer got.
func (r *Response) FailureText(err error) string {
	var pe *httpwire.ProtocolError
	switch {
	case errors.As(err, &pe):
		if errors.Is(pe, io.ErrUnexpectedEOF) && r.status != 0 {
			// "connection closed in chunked body after 12 token events"
			return pe.What + " " + r.progressText()
		}
		return pe.Error()
	case IsReset(err):
		return "connection reset by peer " + r.progressText()
	case err == ErrClosedByPeer:
		return "connection closed by server " + r.progressText()
	}
	return fmt.Sprintf("%v (%s)", err, r.progressText())
}
