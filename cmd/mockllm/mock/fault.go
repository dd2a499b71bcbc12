package mock

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/httpwire"
	"github.com/stampede-bench/stampede/sse"
)

// FaultKind is one way a generation request can go wrong.
type FaultKind int

const (
	// FaultHTTP500, FaultHTTP429 and FaultHTTP503 answer with that status
	// and vLLM's error JSON instead of generating.
	FaultHTTP500 FaultKind = iota
	FaultHTTP429
	FaultHTTP503
	// FaultResetBeforeHeaders closes the connection with SO_LINGER 0 (a TCP
	// RST) before any response byte.
	FaultResetBeforeHeaders
	// FaultResetMidStream sends a RST instead of token At.
	FaultResetMidStream
	// FaultStall delays token At and everything after it by Delay.
	FaultStall
	// FaultMalformedChunk sends a chunk whose size line is not hex in place
	// of token At, then closes the connection.
	FaultMalformedChunk
	// FaultSlowHeaders holds the response headers back for Delay.
	FaultSlowHeaders
	// FaultConnectionClose answers normally with "Connection: close" and
	// closes the connection after the response.
	FaultConnectionClose
	// The hostile kinds never end their answer; they write as fast as the
	// client reads, until it closes the connection (see flooder).
	// FaultFlood streams SSE comments and token events; FaultEndlessLine
	// one SSE data line that never ends; FaultHugeHeaders a response head
	// whose header fields never end.
	FaultFlood
	FaultEndlessLine
	FaultHugeHeaders
	// FaultErrorEvent sends, in place of token At, the error a server
	// reports inside a stream it cannot finish, and ends the response
	// well: an error event for /v1/messages (overloaded_error, after
	// message_start) and /v1/responses, vLLM's {"error": {...}} chunk and
	// [DONE] for completions and chat; a non-streaming request gets a
	// 500.
	FaultErrorEvent
)

var faultNames = [...]string{
	FaultHTTP500:            "http500",
	FaultHTTP429:            "http429",
	FaultHTTP503:            "http503",
	FaultResetBeforeHeaders: "reset-before-headers",
	FaultResetMidStream:     "reset-mid-stream",
	FaultStall:              "stall",
	FaultMalformedChunk:     "malformed-chunk",
	FaultSlowHeaders:        "slow-headers",
	FaultConnectionClose:    "close",
	FaultFlood:              "flood",
	FaultEndlessLine:        "endless-line",
	FaultHugeHeaders:        "huge-headers",
	FaultErrorEvent:         "error-event",
}

// String returns the --fault spelling of k.
func (k FaultKind) String() string {
	if k >= 0 && int(k) < len(faultNames) {
		return faultNames[k]
	}
	return fmt.Sprintf("FaultKind(%d)", int(k))
}

// status returns the HTTP status of an error-response fault, or 0.
func (k FaultKind) status() int {
	switch k {
	case FaultHTTP500:
		return 500
	case FaultHTTP429:
		return 429
	case FaultHTTP503:
		return 503
	}
	return 0
}

// Fault says which generation requests get a fault, and its parameters.
// Exactly one of Prob and Every selects requests.
type Fault struct {
	Kind FaultKind
	// Prob selects each request with this probability, drawn from the
	// request's seeded stream.
	Prob float64
	// Every selects the Nth, 2Nth, ... generation request the server saw.
	Every int
	// At is the token index a mid-stream fault hits; -1 means the middle
	// of the output (max_tokens / 2).
	At int
	// Delay is the stall or header delay.
	Delay time.Duration
}

// String returns f in --fault syntax.
func (f Fault) String() string {
	var b strings.Builder
	b.WriteString(f.Kind.String())
	if f.Every > 0 {
		fmt.Fprintf(&b, ":every=%d", f.Every)
	} else {
		fmt.Fprintf(&b, ":prob=%g", f.Prob)
	}
	if f.At >= 0 && f.Kind.midStream() {
		fmt.Fprintf(&b, ",at=%d", f.At)
	}
	if f.Kind == FaultStall || f.Kind == FaultSlowHeaders {
		fmt.Fprintf(&b, ",ms=%g", float64(f.Delay)/float64(time.Millisecond))
	}
	return b.String()
}

// hostile reports a kind whose answer never ends (see flooder).
func (k FaultKind) hostile() bool {
	return k == FaultFlood || k == FaultEndlessLine || k == FaultHugeHeaders
}

func (k FaultKind) midStream() bool {
	return k == FaultResetMidStream || k == FaultStall || k == FaultMalformedChunk || k == FaultErrorEvent
}

// defaultFaultDelay is the stall or header delay when ms= is not given.
const defaultFaultDelay = time.Second

// ParseFault reads one --fault value: KIND:SELECTOR[,PARAM...] where
// SELECTOR is prob=P (0 < P <= 1) or every=N (N >= 1), and PARAM is
// at=TOKEN_INDEX (mid-stream kinds) or ms=MILLISECONDS (stall,
// slow-headers; default 1000). A hostile kind (flood, endless-line,
// huge-headers) alone means every request. Examples: "http503:prob=0.01",
// "stall:every=100,ms=250,at=3", "reset-mid-stream:prob=0.001", "flood".
func ParseFault(s string) (Fault, error) {
	f := Fault{At: -1}
	kind, params, ok := strings.Cut(s, ":")
	if !ok {
		for k, name := range faultNames {
			if name == s && FaultKind(k).hostile() {
				return Fault{Kind: FaultKind(k), Every: 1, At: -1}, nil
			}
		}
		return f, fmt.Errorf("--fault %q: want KIND:prob=P or KIND:every=N (or flood, endless-line, huge-headers alone)", s)
	}
	f.Kind = -1
	for k, name := range faultNames {
		if name == kind {
			f.Kind = FaultKind(k)
		}
	}
	if f.Kind < 0 {
		return f, fmt.Errorf("--fault %q: unknown kind %q; want one of %s", s, kind, strings.Join(faultNames[:], ", "))
	}
	for _, p := range strings.Split(params, ",") {
		key, val, ok := strings.Cut(p, "=")
		if !ok {
			return f, fmt.Errorf("--fault %q: parameter %q is not key=value", s, p)
		}
		var err error
		switch key {
		case "prob":
			f.Prob, err = strconv.ParseFloat(val, 64)
			if err == nil && !(f.Prob > 0 && f.Prob <= 1) {
				err = fmt.Errorf("want 0 < prob <= 1")
			}
		case "every":
			f.Every, err = strconv.Atoi(val)
			if err == nil && f.Every < 1 {
				err = fmt.Errorf("want every >= 1")
			}
		case "at":
			f.At, err = strconv.Atoi(val)
			if err == nil && f.At < 0 {
				err = fmt.Errorf("want at >= 0")
			}
			if err == nil && !f.Kind.midStream() {
				err = fmt.Errorf("at= applies to reset-mid-stream, stall, malformed-chunk and error-event only")
			}
		case "ms":
			var ms float64
			ms, err = strconv.ParseFloat(val, 64)
			if err == nil && ms < 0 {
				err = fmt.Errorf("want ms >= 0")
			}
			if err == nil && f.Kind != FaultStall && f.Kind != FaultSlowHeaders {
				err = fmt.Errorf("ms= applies to stall and slow-headers only")
			}
			f.Delay = time.Duration(ms * float64(time.Millisecond))
		default:
			err = fmt.Errorf("unknown parameter; want prob, every, at or ms")
		}
		if err != nil {
			return f, fmt.Errorf("--fault %q: %s: %v", s, p, err)
		}
	}
	if (f.Prob > 0) == (f.Every > 0) {
		return f, fmt.Errorf("--fault %q: give exactly one of prob=P and every=N", s)
	}
	if f.Delay == 0 && (f.Kind == FaultStall || f.Kind == FaultSlowHeaders) && !strings.Contains(params, "ms=") {
		f.Delay = defaultFaultDelay
	}
	return f, nil
}

// pickFault returns the first fault that selects the generation request
// with sequence number seq (1-based) and draw key, or nil.
func pickFault(faults []Fault, seed, key, seq uint64) *Fault {
	for i := range faults {
		f := &faults[i]
		if f.Every > 0 {
			if seq%uint64(f.Every) == 0 {
				return f
			}
		} else if unitFloat(mix(seed, key, saltFault+uint64(i))) < f.Prob {
			return f
		}
	}
	return nil
}

// Salts separate the independent draws made from one request key.
const (
	saltOutputLen = 1
	saltJitter    = 2
	saltWords     = 3
	saltID        = 4
	// saltSpecDecode keys a request's speculative-decoding draws.
	saltSpecDecode = 5
	saltFault      = 100
)

// mix hashes (seed, key, salt) to 64 well-mixed bits (splitmix64's
// finaliser applied to a combination of the inputs).
func mix(seed, key, salt uint64) uint64 {
	z := seed ^ key*0x9e3779b97f4a7c15 ^ salt*0xbf58476d1ce4e5b9
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// unitFloat maps 64 random bits to [0, 1).
func unitFloat(x uint64) float64 { return float64(x>>11) / (1 << 53) }

// hashKey turns a request id into a draw key (FNV-1a).
func hashKey(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// streamErrorMessage is the message of FaultErrorEvent's error.
const streamErrorMessage = "injected fault: error-event"

// appendStreamError appends FaultErrorEvent's answer in place of event k
// of st: the in-stream error of st's API and the end of the response (a
// 500 error response when st does not stream).
func (e *encoder) appendStreamError(dst []byte, st *stream, k int) []byte {
	if !st.streaming {
		if st.kind == kindMessages {
			return appendJSONResponse(dst, 500, appendAnthropicErrorBody(nil, anthropicErrorType(500), streamErrorMessage), st.closeAfter)
		}
		return appendErrorResponse(dst, 500, errorType(500), streamErrorMessage, st.closeAfter)
	}
	switch st.kind {
	case kindMessages:
		if k == 0 {
			p := e.messagesEvent("message_start")
			p = append(p, `"message":`...)
			p = e.appendMessageObject(p, st, false)
			e.payload = append(p, '}')
			dst = e.appendTypedEvent(dst, "message_start", e.payload)
		}
		e.payload = appendAnthropicErrorBody(e.payload[:0], anthropicErrorType(529), streamErrorMessage)
		dst = e.appendTypedEvent(dst, "error", e.payload)
	case kindResponses:
		p := e.eventHead(st.phases, "error")
		p = append(p, `"code":"server_error","message":"`+streamErrorMessage+`","param":null}`...)
		e.payload = p
		dst = e.appendTypedEvent(dst, "error", p)
	default:
		dst = e.appendEvent(dst, appendErrorBody(e.payload[:0], 500, errorType(500), streamErrorMessage))
		e.event = sse.AppendDone(e.event[:0])
		dst = httpwire.AppendChunk(dst, e.event)
	}
	return httpwire.AppendLastChunk(dst)
}
