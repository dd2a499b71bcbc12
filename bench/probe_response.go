package bench

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

// probeResponse is the parse state of one probe's answer and the handler
// of its bytes: httpwire hands it the head and the de-framed body, the SSE
// parser its events, and each event's chunk goes to the probe's Stream by
// spec §b's rules (token events give TTFT and latency; usage counts; a
// non-200 status fails on its reason phrase without reading the body).
type probeResponse struct {
	decoder   *sse.Decoder
	streaming bool // false for the non-streaming pooling backends

	status     int // 0 until the head arrived
	reason     []byte
	keepAlive  bool
	done       bool  // the body ended
	bodyTs     int64 // receive time of the read being parsed
	handlerErr error // first error raised inside a parser callback
	body       []byte
	chunk      sse.Chunk
	stream     metrics.Stream

	http httpwire.Parser
	sse  sse.Parser
	json fastjson.Parser
}

var (
	_ httpwire.Handler = (*probeResponse)(nil)
	_ sse.EventHandler = (*probeResponse)(nil)
)

// OnHead implements httpwire.Handler.
func (r *probeResponse) OnHead(h *httpwire.Head, tsNs int64) {
	r.status = h.StatusCode
	r.reason = append(r.reason[:0], h.Reason...)
	r.keepAlive = h.KeepAlive
}

// OnBody implements httpwire.Handler: a stream's bytes go to the SSE
// parser, a pooling body is kept whole, a non-200 body is ignored.
func (r *probeResponse) OnBody(b []byte, tsNs int64) {
	if r.status != 200 || r.handlerErr != nil {
		return
	}
	r.bodyTs = tsNs
	if !r.streaming {
		r.body = append(r.body, b...)
		return
	}
	if err := r.sse.Feed(b, r); err != nil {
		r.handlerErr = err
	}
}

// OnEnd implements httpwire.Handler.
func (r *probeResponse) OnEnd(tsNs int64) {
	r.done = true
	r.bodyTs = tsNs
}

// OnEvent implements sse.EventHandler: one event is one OpenAI chunk.
func (r *probeResponse) OnEvent(ev *sse.Event) error {
	if err := r.decoder.Decode(ev.Data, &r.chunk); err != nil {
		if ev.Unterminated {
			// Python drops a trailing unterminated piece that is not JSON.
			return nil
		}
		return err
	}
	switch {
	case r.chunk.Done:
	case r.chunk.Token:
		r.stream.Token(r.bodyTs, r.chunk.Text)
	case r.chunk.HasUsage:
		r.stream.Usage(r.chunk.PromptTokens, r.chunk.CompletionTokens)
	}
	return nil
}

// resetResponse clears what a response left, for the next probe (or the
// same probe sent again on a fresh connection).
func (r *probeResponse) resetResponse() {
	r.status = 0
	r.reason = r.reason[:0]
	r.keepAlive = false
	r.done = false
	r.handlerErr = nil
	r.body = r.body[:0]
	r.http.Reset(false)
	r.sse.Reset()
}

// consume parses the next bytes of the answer, received at tsNs. finished
// says the probe is decided: ok, or failed with the failure text (a
// protocol error, a malformed chunk, or a status other than 200, which
// Python fails on alone, with the reason phrase).
func (r *probeResponse) consume(b []byte, tsNs int64) (failure string, ok, finished bool) {
	used, err := r.http.Feed(b, tsNs, r)
	if err == nil {
		err = r.handlerErr
	}
	switch {
	case err != nil:
		return r.failureText(err), false, true
	case r.status != 0 && r.status != 200:
		return string(r.reason), false, true
	case r.done:
		// Bytes after the answer are not a response to anything we sent:
		// the connection is not used again.
		r.keepAlive = used == len(b) && r.http.KeepAlive()
		return "", true, true
	}
	return "", false, false
}

// closed decides the probe when the server closed the connection (after
// some bytes of the answer) at tsNs: only a body framed by the close can
// still end well.
func (r *probeResponse) closed(tsNs int64) (failure string, ok bool) {
	if err := r.http.CloseRead(tsNs, r); err != nil {
		return r.failureText(err), false
	}
	if r.status != 200 {
		return string(r.reason), false
	}
	if !r.done {
		return r.failureText(errProbeClosed), false
	}
	r.keepAlive = false
	return "", true
}

// end records the probe's outcome on rec: the failure unless ok, else by
// spec §b's rules a stream succeeds iff a token event arrived, and a
// pooling answer succeeds if its body is JSON.
func (r *probeResponse) end(rec *metrics.Recorder, failure string, ok bool) {
	switch {
	case !ok:
		rec.Fail(&r.stream, failure)
	case !r.streaming:
		r.endPooling(rec)
	default:
		if err := r.sse.Flush(r); err != nil {
			rec.Fail(&r.stream, r.failureText(err))
		} else {
			rec.EndStream(&r.stream)
		}
	}
}

// endPooling ends a 200 pooling answer: its latency is the whole exchange;
// a body that is not JSON fails the probe, as Python's response.json()
// raises.
func (r *probeResponse) endPooling(rec *metrics.Recorder) {
	v, err := r.json.ParseBytes(r.body)
	if err != nil {
		rec.Fail(&r.stream, "malformed JSON response body: "+err.Error())
		return
	}
	prompt := int64(-1)
	if u := v.Get("usage", "prompt_tokens"); u != nil && u.Type() == fastjson.TypeNumber {
		prompt = int64(u.GetFloat64())
	}
	r.stream.Usage(prompt, -1)
	rec.EndPooling(&r.stream, r.bodyTs, 1)
}

// progressText says how far the answer got, for error texts.
func (r *probeResponse) progressText() string {
	if r.status == 0 {
		return "before the response head"
	}
	if n := r.stream.TokenEvents(); n != 1 {
		return "after " + strconv.Itoa(n) + " token events"
	}
	return "after 1 token event"
}

// failureText turns what ended a probe early into its error text.
func (r *probeResponse) failureText(err error) string {
	var pe *httpwire.ProtocolError
	switch {
	case errors.As(err, &pe):
		if errors.Is(pe, io.ErrUnexpectedEOF) && r.status != 0 {
			return pe.What + " " + r.progressText()
		}
		return pe.Error()
	case isConnReset(err):
		return "connection reset by peer " + r.progressText()
	case err == errProbeClosed:
		return "connection closed by server " + r.progressText()
	}
	return fmt.Sprintf("%v (%s)", err, r.progressText())
}
