package metrics

import "sync/atomic"

// Options say how much per-request detail a run keeps beyond what the
// statistics need, and where its records go.
type Options struct {
	// Spool is the run's record log (NewSpool): every ended request's
	// record goes to it. Nil gives the Recorder a spool of its own, in
	// memory (probes, tests): Log returns its records.
	Spool *Spool
	// KeepText keeps every request's generated text.
	KeepText bool
	// KeepUncountedText keeps the generated text of a successful stream
	// whose usage gave no completion_tokens (or 0), so that its output
	// tokens can be counted with the tokenizer after the run, as Python
	// does (spec §d). Token text is then copied into the connection's
	// reusable buffer as it arrives, and becomes a string only at the end
	// of such a request. The buffers cost each in-flight stream its text's
	// bytes: 10,000 streams of 1,000 five-byte tokens took 54 MB more heap
	// than without (measured; the token stamps took 105 MB).
	KeepUncountedText bool
	// OnEnd, when set, is told of each result as the request ends, on the
	// recorder's thread (engine.Config.OnEnd); the pointer and its arrays
	// are valid during the call only. Skipped requests are not told: they
	// never ran.
	OnEnd func(*RequestResult)
	// RunningUsage records how many tokens each token event carried, from
	// the running usage.completion_tokens of each chunk (--per-token-itl;
	// see chunktokens.go): two bytes a token event.
	RunningUsage bool
}

// Recorder collects the results of the requests one shard runs. All methods
// except the progress counters (Completed, Failed, TokenEvents) belong to the
// shard's own thread; the counters may be read from any goroutine.
//
// A request's record goes to the run's record log as it ends, every
// inter-token gap exactly in nanoseconds: nothing is binned or
// approximated, so the statistics equal numpy's, and nothing of an ended
// request stays in the Recorder.
type Recorder struct {
	opts Options
	log  *LogWriter
	own  bool // the spool is the Recorder's own
	// done is the result being ended: built, encoded and told (OnEnd)
	// in place, its ITLNs array reused from request to request.
	done RequestResult

	completed   atomic.Int64
	failed      atomic.Int64
	tokenEvents atomic.Int64

	messages     ServerMessages // error messages inside 200 streams
	sharedStamps atomic.Int64   // atomic: the TLS transport's workers share one Recorder
}

// NewRecorder returns a Recorder for one shard.
func NewRecorder(opts Options) *Recorder {
	r := &Recorder{opts: opts}
	if opts.Spool == nil {
		r.opts.Spool, r.own = NewSpool(LogConfig{MemoryBytes: 1 << 62}), true
	}
	r.log = r.opts.Spool.Writer()
	return r
}

// Flush hands every record to the run's spool; call it once the shard
// has stopped.
func (r *Recorder) Flush() { r.log.Flush() }

// Log returns the records of a Recorder that has a spool of its own, in
// the order they ended (positions 0..n-1 of Requests: SortOptions). It
// flushes the Recorder, which records nothing more after.
func (r *Recorder) Log(o SortOptions) (*Log, error) {
	r.log.Flush()
	return r.opts.Spool.Sort(o)
}

// Messages returns the error messages servers sent inside 200 streams,
// counted by text. Read it after the shard's run.
func (r *Recorder) Messages() *ServerMessages { return &r.messages }

// Completed returns how many requests ended successfully so far.
func (r *Recorder) Completed() int64 { return r.completed.Load() }

// Failed returns how many requests ended in failure so far.
func (r *Recorder) Failed() int64 { return r.failed.Load() }

// TokenEvents returns how many token events arrived so far, on any request.
func (r *Recorder) TokenEvents() int64 { return r.tokenEvents.Load() }

// SharedStamps returns how many token events carried the same receive
// time as the event before them in their stream: they reached the client
// in one read (the client was away longer than the gap, or the server
// wrote them together), so the ITL of 0 between them says nothing about
// the server. Read it after the shard's run.
func (r *Recorder) SharedStamps() int64 { return r.sharedStamps.Load() }

// Stream is the state of one in-flight request. A connection owns one and
// reuses it for every request it carries, so the token timestamp and text
// buffers stop growing after the longest response: recording a token event
// allocates nothing.
type Stream struct {
	rec       *Recorder
	index     int
	promptLen int
	arrivalNs int64
	startNs   int64

	stampsNs     []int64 // run time of each token event
	text         []byte
	outputTokens int
	serverPrompt int // usage.prompt_tokens, -1 until seen
	running      runningCounter
	served       servedCount // the server's own count, wherever it was (answer.go)

	// What the server answered a failed request: the status (0 before a
	// head) and the message of its error body (answer.go).
	status     int
	errMessage []byte

	// The breakdown's instants (run time, 0 until known; see Breakdown):
	// the new connection established (0 on a reused one), the request's
	// last byte sent, the response's first byte received.
	connectedNs int64
	handshakeNs int64 // the TLS handshake completed (0: no TLS, or reused)
	sentNs      int64
	firstByteNs int64

	reasoning reasoningTrack // reasoning and tool calls (reasoning.go)
}

// firstStampsCap is the token-stamp capacity a Stream starts with. Grown
// from nothing, a connection's first response would reallocate the buffer
// at 1, 2, 4, 8 and 16 stamps; a run opens thousands of connections, and
// those allocations (and the collections they bring) showed in the
// 10,000-stream profile. 32 stamps are 256 bytes per connection.
const firstStampsCap = 32

// Begin starts recording request index on s. startNs is just before its
// bytes were written; arrivalNs is when the schedule released it.
func (r *Recorder) Begin(s *Stream, index, promptLen int, arrivalNs, startNs int64) {
	s.rec = r
	s.index = index
	s.promptLen = promptLen
	s.arrivalNs = arrivalNs
	s.startNs = startNs
	if s.stampsNs == nil {
		s.stampsNs = make([]int64, 0, firstStampsCap)
	}
	s.stampsNs = s.stampsNs[:0]
	s.text = s.text[:0]
	s.outputTokens = 0
	s.serverPrompt = -1
	s.running.begin(r.opts.RunningUsage)
	s.served = servedCount{}
	s.status, s.errMessage = 0, s.errMessage[:0]
	s.connectedNs, s.handshakeNs, s.sentNs, s.firstByteNs = 0, 0, 0, 0
	s.reasoning.begin()
}

// Connected records when the request's new connection was established
// (the connect phase ends). A request on a reused connection never calls it.
func (s *Stream) Connected(tsNs int64) { s.connectedNs = tsNs }

// Handshaken records when the TLS handshake on the request's new
// connection completed (the TLS phase ends).
func (s *Stream) Handshaken(tsNs int64) { s.handshakeNs = tsNs }

// Sent records when the request's last byte left: the kernel's transmit
// stamp, or the clock right after the write that completed the request.
// A later call (the kernel's stamp replacing the fallback) wins.
func (s *Stream) Sent(tsNs int64) { s.sentNs = tsNs }

// SentNs returns what Sent recorded, 0 before.
func (s *Stream) SentNs() int64 { return s.sentNs }

// FirstByte records when the response's first byte arrived; only the
// first call counts.
func (s *Stream) FirstByte(tsNs int64) {
	if s.firstByteNs == 0 {
		s.firstByteNs = tsNs
	}
}

// StartNs returns when the request's bytes started going out.
func (s *Stream) StartNs() int64 { return s.startNs }

// TokenEvents returns how many token events the request has received.
func (s *Stream) TokenEvents() int { return len(s.stampsNs) }

// Token records one token event (spec §b: a chunk with non-empty choices)
// received at tsNs with the chunk's text. text is copied only when the run
// may keep text.
func (s *Stream) Token(tsNs int64, text []byte) {
	if n := len(s.stampsNs); n > 0 && s.stampsNs[n-1] == tsNs {
		// Parsed from the same read as the event before: the two share
		// one kernel stamp, and the gap of 0 between them is not a
		// measurement (see SharedStamps).
		s.rec.sharedStamps.Add(1)
	}
	s.stampsNs = append(s.stampsNs, tsNs)
	if s.rec.opts.KeepText || s.rec.opts.KeepUncountedText {
		s.text = append(s.text, text...)
	}
	s.rec.tokenEvents.Add(1)
}

// Usage records a usage object from a non-token chunk; negative values mean
// the field was absent. As in Python, the last usage seen wins: one
// without completion_tokens leaves the request without a count (Python's
// None), while an absent prompt_tokens keeps the prompt length.
func (s *Stream) Usage(promptTokens, completionTokens int64) {
	s.outputTokens = int(max(completionTokens, 0))
	if promptTokens >= 0 {
		s.serverPrompt = int(promptTokens)
	}
}

// NoTokenError is the failure text of a stream that ended without a token
// event; spec §b keeps Python's text, missing space included.
const NoTokenError = "Never received a valid chunk to calculate TTFT.This response will be marked as failed!"

// EndStream ends a streaming request whose body ended normally. It
// succeeds iff at least one token event arrived (spec §b).
func (r *Recorder) EndStream(s *Stream) {
	if len(s.stampsNs) == 0 {
		r.Fail(s, NoTokenError)
		return
	}
	res := r.result(s)
	if r.opts.KeepText || (r.opts.KeepUncountedText && s.outputTokens == 0) {
		res.GeneratedText = string(s.text)
	}
	res.Success = true
	res.LatencyNs = s.stampsNs[len(s.stampsNs)-1] - s.startNs
	if r.opts.RunningUsage {
		res.ChunkTokens = s.running.result(len(s.stampsNs))
	}
	r.finish(res)
	r.completed.Add(1)
}

// EndPooling ends a non-streaming (pooling) request answered 200 at endNs:
// TTFT and latency are both the whole exchange, and the prompt length is the
// server's usage.prompt_tokens, 0 when the body had none (spec §b,
// "Non-streaming pooling"). numInputSequences is 1 for a single prompt.
func (r *Recorder) EndPooling(s *Stream, endNs int64, numInputSequences int) {
	res := r.result(s)
	res.Success = true
	res.TTFTNs = endNs - s.startNs
	res.LatencyNs = res.TTFTNs
	res.Breakdown = s.breakdown(endNs)
	res.PromptLen = max(s.serverPrompt, 0)
	res.NumInputSequences = numInputSequences
	r.finish(res)
	r.completed.Add(1)
}

// Fail ends s's request as failed with the given error text. TTFT and the
// ITLs of token events that did arrive are kept, as Python keeps them on its
// output record; latency stays 0, and so does the text: Python assigns
// generated_text only once the stream has ended.
func (r *Recorder) Fail(s *Stream, errText string) {
	res := r.result(s)
	res.Error = errText
	if len(s.errMessage) > 0 {
		res.ServerMessage = string(s.errMessage)
	}
	r.finish(res)
	r.failed.Add(1)
}

// Skip records request index as failed without having been sent, e.g. when
// the run was cancelled first. arrivalNs is 0 for requests never released.
func (r *Recorder) Skip(index, promptLen int, arrivalNs int64, errText string) {
	r.done = RequestResult{
		Index: index, PromptLen: promptLen, Error: errText,
		ArrivalNs: arrivalNs, NumInputSequences: 1, Reasoning: noReasoning,
		ITLNs: r.done.ITLNs[:0],
	}
	r.log.Append(&r.done)
	r.failed.Add(1)
}

// result builds the fields every ending shares, in the Recorder's done.
func (r *Recorder) result(s *Stream) *RequestResult {
	res := &r.done
	*res = RequestResult{
		Index:             s.index,
		PromptLen:         s.promptLen,
		OutputTokens:      s.outputTokens,
		ChunkEvents:       len(s.stampsNs),
		ArrivalNs:         s.arrivalNs,
		StartNs:           s.startNs,
		QueueNs:           s.startNs - s.arrivalNs,
		NumInputSequences: 1,
		Reasoning:         s.reasoning.result(s.startNs),
		HTTPStatus:        s.status,
		ServerTokens:      s.served.tokens,
		ServerUsage:       s.served.where,
		ITLNs:             res.ITLNs[:0],
	}
	if s.serverPrompt >= 0 {
		res.PromptLen = s.serverPrompt
	}
	if len(s.stampsNs) > 0 {
		res.TTFTNs = s.stampsNs[0] - s.startNs
		res.Breakdown = s.breakdown(s.stampsNs[0])
	}
	for i := 1; i < len(s.stampsNs); i++ {
		res.ITLNs = append(res.ITLNs, s.stampsNs[i]-s.stampsNs[i-1])
	}
	return res
}

// finish records res and tells OnEnd.
func (r *Recorder) finish(res *RequestResult) {
	r.log.Append(res)
	if r.opts.OnEnd != nil {
		r.opts.OnEnd(res)
	}
}

// breakdown splits start → firstNs (the first token event, or a pooling
// answer's end) into its phases. Each instant is held between the one
// before and firstNs, so the phases are never negative and add up to TTFT
// exactly: the clocks behind them (the loop's clock, kernel stamps mapped
// onto it) can disagree by their sampling error, never by more.
func (s *Stream) breakdown(firstNs int64) Breakdown {
	if s.sentNs == 0 || s.firstByteNs == 0 {
		return Breakdown{}
	}
	hold := func(t, lo, hi int64) int64 { return min(max(t, lo), hi) }
	established := s.startNs
	if s.connectedNs != 0 {
		established = hold(s.connectedNs, s.startNs, firstNs)
	}
	secured := established
	if s.handshakeNs != 0 {
		secured = hold(s.handshakeNs, established, firstNs)
	}
	firstByte := hold(s.firstByteNs, secured, firstNs)
	sent := hold(s.sentNs, secured, firstByte)
	return Breakdown{
		Known:        true,
		NewConn:      s.connectedNs != 0,
		ConnectNs:    established - s.startNs,
		TLSNs:        secured - established,
		SendNs:       sent - secured,
		ServerNs:     firstByte - sent,
		FirstTokenNs: firstNs - firstByte,
	}
}
