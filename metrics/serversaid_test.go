package metrics

import (
	"strconv"
	"testing"
)

func TestGroupErrors(t *testing.T) {
	var results []RequestResult
	add := func(n, status int, reason, message string) {
		for range n {
			results = append(results, RequestResult{Index: len(results), HTTPStatus: status, Error: reason, ServerMessage: message})
		}
	}
	add(1, 200, "", "")
	results[0].Success = true
	add(2, 400, "Bad Request", "too long")
	add(3, 404, "Not Found", "no model")
	add(1, 400, "Bad Request", "other")
	add(1, 0, "connection refused", "")
	e := GroupErrors(LogOf(results...))
	if e.Failed != 7 || e.Requests != 8 || e.AllFailed() || e.Other != 0 || len(e.Groups) != 4 {
		t.Fatalf("%+v", e)
	}
	want := []ErrorGroup{{3, 404, "Not Found", "no model", 3}, {2, 400, "Bad Request", "too long", 1},
		{1, 400, "Bad Request", "other", 6}, {1, 0, "connection refused", "", 7}}
	for i, g := range e.Groups {
		if g != want[i] {
			t.Errorf("group %d: %+v, want %+v", i, g, want[i])
		}
	}

	results = results[:0]
	for i := range maxErrorGroups + 5 {
		add(1, 0, "reset after "+strconv.Itoa(i)+" token events", "")
	}
	e = GroupErrors(LogOf(results...))
	if !e.AllFailed() || len(e.Groups) != maxErrorGroups || e.Other != 5 {
		t.Errorf("%d groups, %d other, all failed %v; want %d, 5, true", len(e.Groups), e.Other, e.AllFailed(), maxErrorGroups)
	}
}

// counted is results with each success's output length (Python's count)
// set to lens[i], as the tokenizer's count after the run sets it.
func counted(results []RequestResult, lens []int) *Log {
	for i := range results {
		results[i].TextTokens, results[i].TextCounted = lens[i], true
	}
	return LogOf(results...)
}

func TestCheckUsage(t *testing.T) {
	ok := func(events int, served int64, where UsageSource) RequestResult {
		return RequestResult{Success: true, ChunkEvents: events, ServerTokens: served, ServerUsage: where}
	}
	results := []RequestResult{
		ok(10, 10, UsageChunk),
		ok(10, 12, UsageInTokenChunk),
		ok(10, -3, UsageChunk),
		ok(10, 0, UsageChunk),
		ok(10, 1<<31, UsageChunk),
		ok(10, 0, UsageNone),
		{Success: false, ServerTokens: 99, ServerUsage: UsageChunk},
	}
	for i := range results {
		results[i].Index = i
	}
	outputLens := []int{10, 11, -3, 9, 1 << 31, 9, 0}
	u := CheckUsage(counted(results, outputLens), nil, func(int) int { return 16 })
	if u.Requests != 5 || u.InTokenChunk != 1 || u.ServerTokens != 10+12-3+0+1<<31 || u.Counted != 10+11-3+9+1<<31 {
		t.Errorf("%+v", u)
	}
	if u.Negative != (OddCount{1, 2, -3, 16}) || u.ZeroWithText != (OddCount{1, 3, 0, 16}) || u.OverMax != (OddCount{1, 4, 1 << 31, 16}) || u.Odd() != 3 {
		t.Errorf("odd: %+v %+v %+v", u.Negative, u.ZeroWithText, u.OverMax)
	}
	if u.Disagree() {
		t.Errorf("totals %d and %d differ by under 1%%", u.ServerTokens, u.Counted)
	}
	// llama.cpp's case: 6,176 counted by the server, 6,484 by the tokenizer.
	u = CheckUsage(counted([]RequestResult{ok(100, 6176, UsageInTokenChunk)}, []int{6484}), nil, nil)
	if !u.Disagree() || u.OverMax.Requests != 0 {
		t.Errorf("6176 vs 6484 must disagree (%+v)", u)
	}
	// Without a max_tokens, 2^53+1 is still named.
	if u = CheckUsage(counted([]RequestResult{ok(1, 1<<53+1, UsageChunk), ok(1, 1<<24, UsageChunk)}, []int{0, 0}), nil, nil); u.OverMax.Requests != 1 || u.OverMax.Tokens != 1<<53+1 {
		t.Errorf("2^53+1 without max_tokens: %+v", u.OverMax)
	}
	if u = CheckUsage(counted([]RequestResult{ok(100, 1000, UsageChunk)}, []int{1010}), nil, nil); u.Disagree() {
		t.Errorf("1%% exactly is agreement")
	}
}
