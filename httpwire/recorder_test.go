package httpwire

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// recordedHead is a copy of a Head that outlives OnHead.
type recordedHead struct {
	Major, Minor, StatusCode int
	Reason, ContentType      string
	ContentLength            int64
	Chunked, KeepAlive       bool
	KeepAliveMax             int64
	RequestID                string // Header("X-Request-Id"), "<nil>" if absent
}

// recorder is a Handler that records what a Parser reports in a form that
// does not depend on how the input was split: consecutive OnBody calls are
// merged. It also checks the Handler contract: every call carries the
// timestamp of the Feed call in progress, and nothing follows OnEnd.
type recorder struct {
	now      int64
	events   []string // "head", "body", "end"; consecutive bodies merged
	heads    []recordedHead
	body     []byte
	problems []string
}

func (r *recorder) event(kind string, tsNs int64) {
	if tsNs != r.now {
		r.problems = append(r.problems, fmt.Sprintf("%s with timestamp %d during the Feed call stamped %d", kind, tsNs, r.now))
	}
	if n := len(r.events); n > 0 && r.events[n-1] == "end" {
		r.problems = append(r.problems, kind+" after end")
	}
	if n := len(r.events); kind == "body" && n > 0 && r.events[n-1] == "body" {
		return
	}
	r.events = append(r.events, kind)
}

func (r *recorder) OnHead(h *Head, tsNs int64) {
	r.event("head", tsNs)
	rid := "<nil>"
	if v := h.Header("X-Request-Id"); v != nil {
		rid = string(v)
	}
	r.heads = append(r.heads, recordedHead{
		Major: h.Major, Minor: h.Minor, StatusCode: h.StatusCode,
		Reason: string(h.Reason), ContentType: string(h.ContentType),
		ContentLength: h.ContentLength, Chunked: h.Chunked, KeepAlive: h.KeepAlive, KeepAliveMax: h.KeepAliveMax,
		RequestID: rid,
	})
}

func (r *recorder) OnBody(b []byte, tsNs int64) {
	if len(b) == 0 {
		r.problems = append(r.problems, "OnBody with no bytes")
	}
	r.event("body", tsNs)
	r.body = append(r.body, b...)
}

func (r *recorder) OnEnd(tsNs int64) { r.event("end", tsNs) }

// outcome is everything observable about parsing one input.
type outcome struct {
	Events    string
	Heads     []recordedHead
	Body      string
	Consumed  int    // bytes consumed up to the end of the response; -1 after an error
	Err       string // "" if none
	Part      string // the error's Part
	Done      bool
	KeepAlive bool
}

// parse feeds input to a fresh Parser in the pieces that cuts (increasing
// offsets) make, then, if closeRead, reports the connection's close. Every
// piece is fed from a scratch buffer that is scribbled over once Feed
// returns, so a Handler that kept a slice past its call would see garbage.
// How far a failing parser got depends on the split, so an error outcome
// reports Consumed as -1.
func parse(t testing.TB, input []byte, cuts []int, headRequest, closeRead bool) outcome {
	t.Helper()
	var p Parser
	p.Reset(headRequest)
	r := &recorder{}
	var (
		consumed int
		err      error
		scratch  []byte
		start    int
	)
	bounds := append(append([]int(nil), cuts...), len(input))
	for i, end := range bounds {
		piece := input[start:end]
		start = end
		scratch = append(scratch[:0], piece...)
		r.now = int64(i + 1)
		n, ferr := p.Feed(scratch, r.now, r)
		for j := range scratch {
			scratch[j] = 0xEE
		}
		if n < 0 || n > len(piece) {
			t.Fatalf("Feed consumed %d of %d bytes", n, len(piece))
		}
		consumed += n
		if ferr != nil {
			err = ferr
			break
		}
		if n < len(piece) {
			if !p.Done() {
				t.Fatalf("Feed consumed %d of %d bytes but the response is not done", n, len(piece))
			}
			break
		}
	}
	if err == nil && closeRead {
		r.now++
		err = p.CloseRead(r.now, r)
	}
	if len(r.problems) > 0 {
		t.Fatalf("handler contract broken: %s", strings.Join(r.problems, "; "))
	}
	o := outcome{
		Events: strings.Join(r.events, ","), Heads: r.heads, Body: string(r.body),
		Consumed: consumed, Done: p.Done(), KeepAlive: p.KeepAlive(),
	}
	if err != nil {
		var pe *ProtocolError
		if !errors.As(err, &pe) {
			t.Fatalf("error %v (%T) is not a *ProtocolError", err, err)
		}
		if p.Done() {
			t.Fatalf("parser is Done after error %v", err)
		}
		o.Err = err.Error()
		o.Part = pe.Part
		o.Consumed = -1
	}
	return o
}

// checkSplitInvariance parses input whole, byte by byte, at every single
// split point and at a few random multi-way splits, and fails unless every
// way gives the same outcome. It returns the outcome of the whole feed.
func checkSplitInvariance(t testing.TB, input []byte, headRequest, closeRead bool) outcome {
	t.Helper()
	whole := parse(t, input, nil, headRequest, closeRead)
	compare := func(how string, cuts []int) {
		t.Helper()
		got := parse(t, input, cuts, headRequest, closeRead)
		if !reflect.DeepEqual(got, whole) {
			t.Fatalf("fed %s: got\n%+v\nwant (fed whole)\n%+v", how, got, whole)
		}
	}
	if len(input) > 1 {
		byteCuts := make([]int, 0, len(input)-1)
		for i := 1; i < len(input); i++ {
			byteCuts = append(byteCuts, i)
		}
		compare("byte by byte", byteCuts)
	}
	// Every split point, for inputs small enough to make that cheap.
	if len(input) <= 4096 {
		for i := 1; i < len(input); i++ {
			compare(fmt.Sprintf("split at %d", i), []int{i})
		}
	}
	rng := rand.New(rand.NewPCG(uint64(len(input)), 1))
	for range 20 {
		cuts := randomCuts(rng, len(input))
		compare(fmt.Sprintf("split at %v", cuts), cuts)
	}
	return whole
}

// randomCuts returns increasing split offsets strictly inside [0, n].
func randomCuts(rng *rand.Rand, n int) []int {
	if n < 2 {
		return nil
	}
	var cuts []int
	for at := 1 + rng.IntN(n); at < n; at += 1 + rng.IntN(n/4+1) {
		cuts = append(cuts, at)
	}
	return cuts
}
