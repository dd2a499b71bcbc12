package mock

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The truth log records when the mock really did things, for judging a
// client's timestamps. It is a text file, one record per line, fields
// separated by one space, all times CLOCK_MONOTONIC nanoseconds:
//
//	# mockllm truth log v1 (CLOCK_MONOTONIC ns)
//	R <seq> <arrival_ns> <request_id>
//	H <seq> <sent_ns>
//	T <seq> <index> <sent_ns> <intended_ns> [<tokens>]
//	C <seq> <closed_ns>
//	A <seq> <rx_ns>
//
// An R line is a request on the generation schedule (completions, chat,
// embeddings, pooling, rerank): seq numbers them from 1 in arrival order,
// arrival_ns is when the event loop first saw the request's bytes, and
// request_id is its x-request-id header ("-" when absent) with bytes
// <= 0x20, 0x7f and '%' written as %XX. A T line is one streamed token
// event handed to write(2): index counts from 0 within the stream (a chat
// stream's role chunk goes out in the same write as token 0; a batched
// completions prompt writes all its choices' chunks for one index in one
// write; the usage chunk and [DONE] share the last token's write), sent_ns
// is read right before write(2), and intended_ns is when the timing model
// meant to send it; tokens, present only when it is not 1, is how many
// tokens the event carried (--tokens-per-chunk, --spec-decode-stream: the
// event's chunk holds them all, and its running usage counts them). A
// response sent whole (embeddings, pooling, rerank, non-streaming
// completions and chat) gets one T line with index 0. An H line is when a
// stream's response headers, its first bytes, were handed to write(2)
// (read right before it). H and T lines follow their R line;
// lines of different requests interleave. A C line, at the end of the
// log, is when the mock found the connection of a hostile answer (flood,
// endless-line, huge-headers: answers that never end) closed by the
// client: when the client gave up on it. An A line, at the end too, is
// the kernel's receive stamp of the segment that carried the request's
// first byte (see arrival_linux.go): when it really arrived, where
// arrival_ns is when the event loop read it. Requests over TLS, and every
// request when the mock may not open a packet socket, have none.
const truthHeader = "# mockllm truth log v1 (CLOCK_MONOTONIC ns)\n"

// TruthRequest is one request of a truth log.
type TruthRequest struct {
	Seq       uint64
	RequestID string // "" when the request had no x-request-id
	ArrivalNs int64
	// HeadersNs is when a stream's headers were written (H record), 0 if
	// the log has none; ArrivalRxNs the kernel's receive stamp of the
	// request's arrival (A record), 0 if none.
	HeadersNs   int64
	ArrivalRxNs int64
	Tokens      []TruthToken
	// ClosedNs is when the client closed a hostile answer's connection
	// (C record), 0 if the log has none.
	ClosedNs int64
}

// TruthToken is one token event of a truth log.
type TruthToken struct {
	Index      int
	SentNs     int64
	IntendedNs int64
	// Tokens is how many tokens the event carried (1 unless the mock
	// sends several per chunk).
	Tokens int
}

// truthWriter appends records to a buffered file. Only the writer
// goroutine uses it; a nil *truthWriter records nothing.
type truthWriter struct {
	f    *os.File
	bw   *bufio.Writer
	line []byte
	err  error
	// keys locate the requests' first bytes for their A records.
	keys []arrivalKey
}

func createTruthLog(path string) (*truthWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--truth-log: %w", err)
	}
	t := &truthWriter{f: f, bw: bufio.NewWriterSize(f, 1<<20)}
	_, t.err = t.bw.WriteString(truthHeader)
	return t, nil
}

func (t *truthWriter) request(st *stream) {
	if t == nil {
		return
	}
	b := append(t.line[:0], "R "...)
	b = strconv.AppendUint(b, st.seq, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, st.arrivalNs, 10)
	b = append(b, ' ')
	if st.requestID == "" {
		b = append(b, '-')
	} else {
		b = appendEscapedID(b, st.requestID)
	}
	t.write(append(b, '\n'))
	if st.arrival.peer != 0 && st.arrival.offset >= 0 {
		t.keys = append(t.keys, st.arrival)
	}
	if st.headersNs != 0 {
		t.headers(st, st.headersNs)
	}
}

// headers records when st's headers were written.
func (t *truthWriter) headers(st *stream, sentNs int64) {
	if t == nil {
		return
	}
	b := append(t.line[:0], "H "...)
	b = strconv.AppendUint(b, st.seq, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, sentNs, 10)
	t.write(append(b, '\n'))
}

// arrivals writes the A records of the requests x has a stamp for.
func (t *truthWriter) arrivals(x *arrivalIndex) {
	for _, k := range t.keys {
		rx := x.lookup(k)
		if rx == 0 {
			continue
		}
		b := append(t.line[:0], "A "...)
		b = strconv.AppendUint(b, k.seq, 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, rx, 10)
		t.write(append(b, '\n'))
	}
}

func (t *truthWriter) token(st *stream, k, tokens int, sentNs, intendedNs int64) {
	if t == nil {
		return
	}
	b := append(t.line[:0], "T "...)
	b = strconv.AppendUint(b, st.seq, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(k), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, sentNs, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, intendedNs, 10)
	b = appendTokensField(b, tokens)
	t.write(append(b, '\n'))
}

func (t *truthWriter) closed(c floodClose) {
	b := append(t.line[:0], "C "...)
	b = strconv.AppendUint(b, c.seq, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, c.closedNs, 10)
	t.write(append(b, '\n'))
}

func (t *truthWriter) write(b []byte) {
	t.line = b
	if t.err == nil {
		_, t.err = t.bw.Write(b)
	}
}

func (t *truthWriter) close() error {
	err := t.err
	if ferr := t.bw.Flush(); err == nil {
		err = ferr
	}
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("truth log %s: %w", t.f.Name(), err)
	}
	return nil
}

const hexDigits = "0123456789ABCDEF"

func appendEscapedID(dst []byte, id string) []byte {
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c <= ' ' || c == 0x7f || c == '%' {
			dst = append(dst, '%', hexDigits[c>>4], hexDigits[c&15])
			continue
		}
		dst = append(dst, c)
	}
	return dst
}

func unescapeID(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("truncated escape in request id %q", s)
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", fmt.Errorf("malformed escape in request id %q", s)
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), nil
}

// ReadTruthLog reads a truth log written by the mock server. Requests come
// back in the order of their R lines, each with its tokens in file order.
func ReadTruthLog(path string) ([]TruthRequest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var reqs []TruthRequest
	bySeq := make(map[uint64]int)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		fields := strings.Split(line, " ")
		bad := func(what string) error {
			return fmt.Errorf("truth log %s:%d: %s in %q", path, lineNo, what, line)
		}
		switch {
		case fields[0] == "R" && len(fields) == 4:
			seq, err1 := strconv.ParseUint(fields[1], 10, 64)
			arrival, err2 := strconv.ParseInt(fields[2], 10, 64)
			if err := errors.Join(err1, err2); err != nil {
				return nil, bad("malformed number")
			}
			id := ""
			if fields[3] != "-" {
				if id, err = unescapeID(fields[3]); err != nil {
					return nil, bad(err.Error())
				}
			}
			if _, dup := bySeq[seq]; dup {
				return nil, bad("repeated request")
			}
			bySeq[seq] = len(reqs)
			reqs = append(reqs, TruthRequest{Seq: seq, RequestID: id, ArrivalNs: arrival})
		case fields[0] == "T" && (len(fields) == 5 || len(fields) == 6):
			seq, err1 := strconv.ParseUint(fields[1], 10, 64)
			index, err2 := strconv.Atoi(fields[2])
			sent, err3 := strconv.ParseInt(fields[3], 10, 64)
			intended, err4 := strconv.ParseInt(fields[4], 10, 64)
			tokens, err5 := 1, error(nil)
			if len(fields) == 6 {
				tokens, err5 = strconv.Atoi(fields[5])
			}
			if err := errors.Join(err1, err2, err3, err4, err5); err != nil || tokens < 1 {
				return nil, bad("malformed number")
			}
			i, ok := bySeq[seq]
			if !ok {
				return nil, bad("token of a request with no R line")
			}
			reqs[i].Tokens = append(reqs[i].Tokens, TruthToken{Index: index, SentNs: sent, IntendedNs: intended, Tokens: tokens})
		case (fields[0] == "C" || fields[0] == "H" || fields[0] == "A") && len(fields) == 3:
			seq, err1 := strconv.ParseUint(fields[1], 10, 64)
			ns, err2 := strconv.ParseInt(fields[2], 10, 64)
			if err := errors.Join(err1, err2); err != nil {
				return nil, bad("malformed number")
			}
			i, ok := bySeq[seq]
			if !ok {
				return nil, bad("record of a request with no R line")
			}
			switch fields[0] {
			case "C":
				reqs[i].ClosedNs = ns
			case "H":
				reqs[i].HeadersNs = ns
			default:
				reqs[i].ArrivalRxNs = ns
			}
		default:
			return nil, bad("unknown record")
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("truth log %s: %w", path, err)
	}
	return reqs, nil
}
