package metrics

// RequestResult is one benchmark request's outcome, the Go twin of Python's
// RequestFuncOutput (spec §b). Times are nanoseconds on the run's monotonic
// clock (StartNs, ArrivalNs) or durations in nanoseconds; the statistics in
// this package convert to Python's float seconds / milliseconds at the edge.
//
// Shards fill these through their Recorder; after the run the engine gathers
// them in request order.
type RequestResult struct {
	// Index is the request's position in the dataset (0-based).
	Index int
	// Success follows spec §b: at least one token event arrived (streaming),
	// or the status was 200 (non-streaming pooling).
	Success bool
	// Error is the failure text; "" for successes.
	Error string
	// PromptLen is the dataset's prompt length, replaced by the server's
	// usage.prompt_tokens when the stream carried it.
	PromptLen int
	// OutputTokens is usage.completion_tokens, 0 if the server sent none.
	OutputTokens int
	// ChunkEvents counts token events (chunks whose choices were non-empty).
	ChunkEvents int
	// GeneratedText is the concatenated text of the token events; kept only
	// when the run needs it (detailed results, or no usage to count from).
	GeneratedText string
	// ArrivalNs is when the schedule released the request (Python's arrival,
	// task creation); StartNs is just before its bytes were written (Python's
	// st = perf_counter() before the POST). QueueNs = StartNs - ArrivalNs.
	ArrivalNs int64
	StartNs   int64
	QueueNs   int64
	// TTFTNs is first token event - start; LatencyNs is last token event -
	// start (not stream close), as in Python.
	TTFTNs    int64
	LatencyNs int64
	// ITLNs holds the gaps between successive token events, exactly, for
	// every request that had two or more (failed ones too, as Python keeps
	// them).
	ITLNs []int64
	// Breakdown splits TTFT into where its time went.
	Breakdown Breakdown
	// ChunkTokens is how many tokens each token event carried, by the
	// running usage (Options.RunningUsage); set for successful requests.
	ChunkTokens ChunkTokens
	// NumInputSequences is 1 except for pooling requests over a list prompt.
	NumInputSequences int
	// TextTokens is the tokenizer's count of GeneratedText, taken once after
	// the run (SortOptions.CountTokens) when TextCounted: the output length
	// of a success whose usage gave none (OutputLen).
	TextTokens  int
	TextCounted bool

	// Reasoning is when the answer began after any reasoning, and the
	// request's tool calls (stampede's own; reasoning.go).
	Reasoning Reasoning

	// What the server said, beyond what Python keeps (answer.go).
	//
	// HTTPStatus is the answer's status code, 0 when no head arrived.
	// ServerMessage is a failed request's error body as the server worded
	// it (the message of a JSON error, else the body's first bytes,
	// escaped); "" when the answer had none. Error stays Python's text.
	HTTPStatus    int
	ServerMessage string
	// ServerTokens is the last usage.completion_tokens the server sent,
	// wherever it sent it; ServerUsage says where that was. OutputTokens
	// is what Python reads: only a usage chunk without choices.
	ServerTokens int64
	ServerUsage  UsageSource
}

// Breakdown is where one request's TTFT went, in phases that add up to it
// exactly: ConnectNs + TLSNs + SendNs + ServerNs + FirstTokenNs = TTFTNs. Queue wait
// (RequestResult.QueueNs) comes before the start and is not part of TTFT.
type Breakdown struct {
	// Known: the transport recorded the phases (the request's last byte
	// went out and a response byte came back).
	Known bool
	// NewConn: the request opened its connection; ConnectNs is 0 on a
	// reused one.
	NewConn bool
	// ConnectNs is start → connection established (as the loop learned it).
	ConnectNs int64
	// TLSNs is established → TLS handshake complete (0 without TLS or on
	// a reused connection).
	TLSNs int64
	// SendNs is established (or handshake complete, or start) → the request's last byte sent
	// (the kernel's transmit stamp where it gives one).
	SendNs int64
	// ServerNs is the server's time to first byte: request sent → the
	// response's first byte received (kernel receive stamps).
	ServerNs int64
	// FirstTokenNs is the response's first byte → its first token event.
	FirstTokenNs int64
}

// RunData is everything a run measured, gathered from all shards after the
// run: the input to Compute.
type RunData struct {
	// Log holds one record per benchmark request, in request order.
	Log *Log
	// ServerMessages counts the error messages servers sent inside 200
	// streams, by text.
	ServerMessages ServerMessages
	// DurationNs is Python's benchmark duration: from just before the first
	// request was scheduled until the last one finished.
	DurationNs int64
}

// OutputLen is Python's output token count of a successful request:
// usage.completion_tokens when non-zero, else the tokenizer's count of the
// generated text (taken after the run, or by count when not yet taken),
// else 1. A failed request has 0.
func (r *RequestResult) OutputLen(count func(string) int) int {
	switch {
	case !r.Success:
		return 0
	case r.OutputTokens != 0:
		return r.OutputTokens
	case r.TextCounted:
		return r.TextTokens
	case count != nil:
		return count(r.GeneratedText)
	default:
		return 1
	}
}

// Requests is the number of requests in d.
func (d *RunData) Requests() int {
	if d == nil {
		return 0
	}
	return d.Log.Len()
}
