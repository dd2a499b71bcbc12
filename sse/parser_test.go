package sse

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// gotEvent is an Event copied out of the handler call, in a comparable form.
type gotEvent struct {
	name, data, id string
	hasName, hasID bool
	retry          int64
	unterminated   bool
}

func (e gotEvent) String() string {
	name, id := "<nil>", "<nil>"
	if e.hasName {
		name = fmt.Sprintf("%q", e.name)
	}
	if e.hasID {
		id = fmt.Sprintf("%q", e.id)
	}
	return fmt.Sprintf("{name=%s data=%q id=%s retry=%d unterminated=%v}", name, e.data, id, e.retry, e.unterminated)
}

// data returns the event most streams carry: data only.
func data(s string) gotEvent { return gotEvent{data: s, retry: -1} }

type recorder struct {
	events []gotEvent
	failAt int // return errStop from the failAt-th event (1-based); 0 never
}

var errStop = errors.New("stop")

func (r *recorder) OnEvent(ev *Event) error {
	r.events = append(r.events, gotEvent{
		name: string(ev.Name), hasName: ev.Name != nil,
		data: string(ev.Data),
		id:   string(ev.ID), hasID: ev.ID != nil,
		retry:        ev.Retry,
		unterminated: ev.Unterminated,
	})
	if r.failAt > 0 && len(r.events) == r.failAt {
		return errStop
	}
	return nil
}

// feedSplit feeds stream in pieces cut at the given offsets, then flushes.
func feedSplit(t testing.TB, stream []byte, cuts []int) ([]gotEvent, int, error) {
	t.Helper()
	var p Parser
	var r recorder
	for _, read := range split(stream, cuts) {
		// Each read in a buffer of its own, overwritten once Feed returns,
		// as a connection's read buffer is by the next read: nothing Feed
		// keeps may alias it.
		buf := slices.Clone(read)
		err := p.Feed(buf, &r)
		for i := range buf {
			buf[i] = 'X'
		}
		if err != nil {
			return r.events, p.Comments(), err
		}
	}
	err := p.Flush(&r)
	return r.events, p.Comments(), err
}

var parserCases = []struct {
	name     string
	in       string
	want     []gotEvent
	comments int
}{
	{"data with space", "data: {\"a\":1}\n\n", []gotEvent{data(`{"a":1}`)}, 0},
	{"data without space", "data:{\"a\":1}\n\n", []gotEvent{data(`{"a":1}`)}, 0},
	{"only one space stripped", "data:  x \n\n", []gotEvent{data(" x ")}, 0},
	{"tab kept", "data:\tx\n\n", []gotEvent{data("\tx")}, 0},
	{"empty data field", "data:\n\n", []gotEvent{data("")}, 0},
	{"bare field name", "data\n\n", []gotEvent{data("")}, 0},
	{"multi-line data", "data: a\ndata: b\ndata:\n\n", []gotEvent{data("a\nb\n")}, 0},
	{"colon in value", "data: {\"k\":\"a:b\"}\n\n", []gotEvent{data(`{"k":"a:b"}`)}, 0},
	{"two events", "data: 1\n\ndata: 2\n\n", []gotEvent{data("1"), data("2")}, 0},
	{"extra blank lines", "\n\n\ndata: 1\n\n\n\ndata: 2\n\n", []gotEvent{data("1"), data("2")}, 0},
	{"crlf", "data: 1\r\n\r\ndata: 2\r\n\r\n", []gotEvent{data("1"), data("2")}, 0},
	{"lone cr", "data: 1\r\rdata: 2\r\r", []gotEvent{data("1"), data("2")}, 0},
	{"mixed endings", "data: a\r\ndata: b\rdata: c\n\r\n", []gotEvent{data("a\nb\nc")}, 0},
	{"cr cr lf is two endings", "data: 1\r\r\ndata: 2\n\n", []gotEvent{data("1"), data("2")}, 0},
	{"event name", "event: delta\ndata: x\n\n", []gotEvent{{name: "delta", hasName: true, data: "x", retry: -1}}, 0},
	{"empty event name", "event:\ndata: x\n\n", []gotEvent{{name: "", hasName: true, data: "x", retry: -1}}, 0},
	{"id", "id: 7\ndata: x\n\n", []gotEvent{{id: "7", hasID: true, data: "x", retry: -1}}, 0},
	{"id does not carry over", "id: 7\ndata: x\n\ndata: y\n\n", []gotEvent{{id: "7", hasID: true, data: "x", retry: -1}, data("y")}, 0},
	{"id with nul ignored", "id: a\x00b\ndata: x\n\n", []gotEvent{data("x")}, 0},
	{"retry", "retry: 1500\ndata: x\n\n", []gotEvent{{data: "x", retry: 1500}}, 0},
	{"retry not digits", "retry: 15s\ndata: x\n\n", []gotEvent{data("x")}, 0},
	{"retry empty", "retry:\ndata: x\n\n", []gotEvent{data("x")}, 0},
	{"retry overflow", "retry: 99999999999999999999\ndata: x\n\n", []gotEvent{data("x")}, 0},
	{"retry max int64", "retry: 9223372036854775807\ndata: x\n\n", []gotEvent{{data: "x", retry: 9223372036854775807}}, 0},
	{"unknown field ignored", "foo: bar\ndata: x\n\n", []gotEvent{data("x")}, 0},
	{"field names are case-sensitive", "Data: x\n\n", nil, 0},
	{"leading space makes another field", " data: x\n\n", nil, 0},
	{"comment only", ": ping\n\n", nil, 1},
	{"bare colon comment", ":\n\n", nil, 1},
	{"comments between events", ": ping\n\ndata: 1\n\n: ping\n: pong\n\n", []gotEvent{data("1")}, 3},
	{"comment inside event", "data: a\n: note\ndata: b\n\n", []gotEvent{data("a\nb")}, 1},
	{"fields without data are not events", "event: x\nid: 1\nretry: 5\n\n", nil, 0},
	{"bom stripped", "\xEF\xBB\xBFdata: x\n\n", []gotEvent{data("x")}, 0},
	{"bom only at start", "data: x\n\n\xEF\xBB\xBFdata: y\n\n", []gotEvent{data("x")}, 0},
	{"unterminated event flushed", "data: 1\n\ndata: [DONE]", []gotEvent{data("1"), {data: "[DONE]", retry: -1, unterminated: true}}, 0},
	{"one newline then end", "data: 1\n", []gotEvent{{data: "1", retry: -1, unterminated: true}}, 0},
	{"cr then end", "data: 1\r", []gotEvent{{data: "1", retry: -1, unterminated: true}}, 0},
	{"unterminated comment", "data: 1\n\n: bye", []gotEvent{data("1")}, 1},
	{"unterminated field only", "data: 1\n\nevent: x", []gotEvent{data("1")}, 0},
	{"empty body", "", nil, 0},
	{"binary data kept", "data: \x00\xff\n\n", []gotEvent{data("\x00\xff")}, 0},
}

func TestParser(t *testing.T) {
	for _, tc := range parserCases {
		t.Run(tc.name, func(t *testing.T) {
			got, comments, err := feedSplit(t, []byte(tc.in), nil)
			if err != nil {
				t.Fatalf("Feed: %v", err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("events\n got  %v\n want %v", got, tc.want)
			}
			if comments != tc.comments {
				t.Errorf("Comments() = %d, want %d", comments, tc.comments)
			}
		})
	}
}

// TestParserSplitInvariance feeds every case cut at every single point and
// byte by byte: the events must not depend on how the body was read.
func TestParserSplitInvariance(t *testing.T) {
	for _, tc := range parserCases {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.in)
			for c := 0; c <= len(in); c++ {
				got, comments, err := feedSplit(t, in, []int{c})
				if err != nil || !slices.Equal(got, tc.want) || comments != tc.comments {
					t.Fatalf("cut at %d: events %v, comments %d, err %v; want %v, %d", c, got, comments, err, tc.want, tc.comments)
				}
			}
			every := make([]int, 0, len(in))
			for c := 1; c < len(in); c++ {
				every = append(every, c)
			}
			got, comments, err := feedSplit(t, in, every)
			if err != nil || !slices.Equal(got, tc.want) || comments != tc.comments {
				t.Fatalf("byte by byte: events %v, comments %d, err %v; want %v, %d", got, comments, err, tc.want, tc.comments)
			}
		})
	}
}

func TestParserRandomSplits(t *testing.T) {
	// Every case, each closed by a blank line so no block runs into the next.
	var stream strings.Builder
	for _, tc := range parserCases {
		stream.WriteString(tc.in)
		stream.WriteString("\n\n")
	}
	in := []byte(stream.String())
	want, wantComments, err := feedSplit(t, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 30 {
		t.Fatalf("concatenated stream gave only %d events", len(want))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		cuts := randomCuts(rng, len(in))
		got, comments, err := feedSplit(t, in, cuts)
		if err != nil || !slices.Equal(got, want) || comments != wantComments {
			t.Fatalf("cuts %v: %d events, comments %d, err %v; want %d events, %d comments", cuts, len(got), comments, err, len(want), wantComments)
		}
	}
}

// split cuts b at the given ascending offsets into the reads a client sees.
func split(b []byte, cuts []int) [][]byte {
	reads := make([][]byte, 0, len(cuts)+1)
	prev := 0
	for _, c := range cuts {
		reads = append(reads, b[prev:c])
		prev = c
	}
	return append(reads, b[prev:])
}

func randomCuts(rng *rand.Rand, n int) []int {
	var cuts []int
	for c := rng.IntN(8); c < n; c += 1 + rng.IntN(40) {
		cuts = append(cuts, c)
	}
	return cuts
}

func TestParserHandlerErrorStopsFeed(t *testing.T) {
	var p Parser
	r := recorder{failAt: 2}
	err := p.Feed([]byte("data: 1\n\ndata: 2\n\ndata: 3\n\n"), &r)
	if !errors.Is(err, errStop) {
		t.Fatalf("Feed error = %v, want the handler's error", err)
	}
	if len(r.events) != 2 {
		t.Fatalf("handler saw %d events after stopping at the 2nd", len(r.events))
	}
}

func TestParserFlushErrorFromHandler(t *testing.T) {
	var p Parser
	r := recorder{failAt: 1}
	if err := p.Feed([]byte("data: x"), &r); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(&r); !errors.Is(err, errStop) {
		t.Fatalf("Flush error = %v, want the handler's error", err)
	}
}

func TestParserEventTooLarge(t *testing.T) {
	big := bytes.Repeat([]byte("x"), MaxEventBytes)
	tests := []struct {
		name   string
		chunks [][]byte
	}{
		{"one data line over the limit", [][]byte{[]byte("data:"), big, []byte("\n\n")}},
		{"partial line over the limit", [][]byte{[]byte("data:"), big}},
		{"complete line in one read", [][]byte{append(append([]byte("data:"), big...), '\n')}},
		{"many lines over the limit", [][]byte{[]byte("data: "), big[:MaxEventBytes/2], []byte("\ndata: "), big[:MaxEventBytes/2], []byte("\n")}},
		{"endless comments", [][]byte{[]byte(":"), big, []byte("\n")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p Parser
			var r recorder
			var err error
			for _, c := range tc.chunks {
				if err = p.Feed(c, &r); err != nil {
					break
				}
			}
			if !errors.Is(err, ErrEventTooLarge) {
				t.Fatalf("Feed error = %v, want ErrEventTooLarge", err)
			}
			if len(r.events) != 0 {
				t.Fatalf("delivered %d events", len(r.events))
			}
		})
	}
}

func TestParserEventAtLimit(t *testing.T) {
	payload := bytes.Repeat([]byte("x"), MaxEventBytes-len("data:"))
	var p Parser
	var r recorder
	for _, c := range [][]byte{[]byte("data:"), payload, []byte("\n\n")} {
		if err := p.Feed(c, &r); err != nil {
			t.Fatalf("an event of exactly MaxEventBytes: %v", err)
		}
	}
	if len(r.events) != 1 || len(r.events[0].data) != len(payload) {
		t.Fatalf("got %d events", len(r.events))
	}
}

func TestParserReset(t *testing.T) {
	var p Parser
	var r recorder
	if err := p.Feed([]byte(": ping\n\ndata: half"), &r); err != nil {
		t.Fatal(err)
	}
	p.Reset()
	if p.Comments() != 0 {
		t.Errorf("Comments() = %d after Reset", p.Comments())
	}
	if err := p.Feed([]byte("\xEF\xBB\xBFdata: fresh\n\n"), &r); err != nil {
		t.Fatal(err)
	}
	if want := []gotEvent{data("fresh")}; !slices.Equal(r.events, want) {
		t.Fatalf("after Reset: %v, want %v", r.events, want)
	}

	// Reset lets go of buffers grown by one huge event.
	if err := p.Feed(append(bytes.Repeat([]byte("x"), 2*retainBytes), '\n'), &r); err != nil {
		t.Fatal(err)
	}
	p.Reset()
	if cap(p.line) > retainBytes {
		t.Errorf("Reset kept a %d-byte line buffer", cap(p.line))
	}

	// So does Flush, which ends each body of a keep-alive connection.
	huge := append(append([]byte("data: "), bytes.Repeat([]byte("x"), 2*retainBytes)...), "\n\n"...)
	if err := p.Feed(huge, &r); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(&r); err != nil {
		t.Fatal(err)
	}
	if cap(p.data) > retainBytes {
		t.Errorf("Flush kept a %d-byte data buffer", cap(p.data))
	}
}

// TestParserFlushStartsNextBody: after Flush the same Parser reads the next
// body of a keep-alive connection from a clean state, including a pending CR.
func TestParserFlushStartsNextBody(t *testing.T) {
	var p Parser
	var r recorder
	for _, body := range []string{"data: a\r", "\ndata: b\n\n"} {
		if err := p.Feed([]byte(body), &r); err != nil {
			t.Fatal(err)
		}
		if err := p.Flush(&r); err != nil {
			t.Fatal(err)
		}
	}
	want := []gotEvent{{data: "a", retry: -1, unterminated: true}, data("b")}
	if !slices.Equal(r.events, want) {
		t.Fatalf("events %v, want %v", r.events, want)
	}
}

func TestParserZeroAllocs(t *testing.T) {
	stream := []byte(": ping\n\nevent: e\nid: 1\ndata: {\"a\":1}\r\n\r\ndata: b\ndata: c\n\n")
	var p Parser
	var h countHandler
	feed := func() {
		for i := 0; i < len(stream); i += 7 {
			_ = p.Feed(stream[i:min(i+7, len(stream))], &h)
		}
		_ = p.Flush(&h)
	}
	feed()
	if n := testing.AllocsPerRun(100, feed); n != 0 {
		t.Fatalf("%v allocs per stream after warm-up, want 0", n)
	}
}

type countHandler struct{ events, bytes int }

func (h *countHandler) OnEvent(ev *Event) error {
	h.events++
	h.bytes += len(ev.Data)
	return nil
}
