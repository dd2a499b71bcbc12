package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/metrics"
)

func failedRun(n, ok int) []metrics.RequestResult {
	results := make([]metrics.RequestResult, n)
	for i := range results {
		results[i] = metrics.RequestResult{Index: i, HTTPStatus: 404, Error: "Not Found", ServerMessage: "The model `other-model` does not exist."}
		if i < ok {
			results[i] = metrics.RequestResult{Index: i, Success: true, HTTPStatus: 200}
		}
	}
	return results
}

func TestWriteErrors(t *testing.T) {
	id := func(i int) string { return "bench-1-" + string(rune('0'+i)) }
	var out bytes.Buffer
	WriteErrors(&out, NewSidecarErrors(metrics.GroupErrors(metrics.LogOf(failedRun(200, 0)...)), "http://h/v1/completions", id))
	want := "stampede: ALL 200 REQUESTS FAILED: the block above measured nothing. The server (http://h/v1/completions) said:\n" +
		"  200 × 404 Not Found: The model `other-model` does not exist.\n"
	if out.String() != want {
		t.Errorf("all failed:\n%s\nwant\n%s", out.String(), want)
	}

	results := failedRun(4, 1)
	results[3] = metrics.RequestResult{Index: 3, HTTPStatus: 307,
		Error: "server answered 307 Temporary Redirect to https://x/v1; point --base-url there (stampede does not follow redirects)"}
	results = append(results, metrics.RequestResult{Index: 4, Error: "Traceback (most recent call last):\n  File x\nValueError: bad\x1b[31m\n"})
	out.Reset()
	e := NewSidecarErrors(metrics.GroupErrors(metrics.LogOf(results...)), "u", id)
	WriteErrors(&out, e)
	for _, line := range []string{
		"stampede: 4 of 5 requests failed:\n",
		"  2 × 404 Not Found: The model `other-model` does not exist.\n",
		"  1 × server answered 307 Temporary Redirect to https://x/v1; point --base-url there (stampede does not follow redirects)\n",
		"  1 × ValueError: bad\\x1b[31m\n",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("no line %q in\n%s", line, out.String())
		}
	}
	if e.Groups[0].ExampleRequestID != "bench-1-1" || e.Groups[0].ExampleIndex != 1 {
		t.Errorf("example %+v, want request 1", e.Groups[0])
	}

	out.Reset()
	WriteErrors(&out, NewSidecarErrors(metrics.GroupErrors(metrics.LogOf(failedRun(3, 3)...)), "u", nil))
	if out.Len() != 0 {
		t.Errorf("a run without failures printed %q", out.String())
	}
}

func TestWriteUsageNotes(t *testing.T) {
	ok := func(events int, served int64, where metrics.UsageSource) metrics.RequestResult {
		return metrics.RequestResult{Success: true, ChunkEvents: events, ServerTokens: served, ServerUsage: where}
	}
	// llama.cpp's count only in its last chunk with choices, and a
	// negative count.
	results := []metrics.RequestResult{ok(100, 6176, metrics.UsageInTokenChunk), ok(1, -2, metrics.UsageChunk)}
	results[1].Index = 1
	u := NewSidecarUsage(metrics.CheckUsage(countedLog(results, []int{6484, -2}), nil, func(int) int { return 8192 }))
	var out bytes.Buffer
	WriteUsageNotes(&out, u)
	got := out.String()
	for _, part := range []string{
		"stampede: WARNING: the server counted 6174 output tokens on 2 requests, the block counts 6482 (+5.0%)",
		"1 of them sent it only in a chunk with choices",
		"looked wrong: 1 negative (request 1: -2);",
	} {
		if !strings.Contains(got, part) {
			t.Errorf("no %q in\n%s", part, got)
		}
	}
	if strings.Count(got, "\n") != 2 {
		t.Errorf("want the warning and one note, got\n%s", got)
	}

	// 2^31 tokens for a request of 128: Python counts them; the note says so.
	u = NewSidecarUsage(metrics.CheckUsage(countedLog([]metrics.RequestResult{ok(1, 1<<31, metrics.UsageChunk)}, []int{1 << 31}), nil, func(int) int { return 128 }))
	out.Reset()
	WriteUsageNotes(&out, u)
	if !strings.Contains(out.String(), "1 over max_tokens (request 0: 2147483648 > 128)") || strings.Contains(out.String(), "WARNING") {
		t.Errorf("2^31 tokens: %s", out.String())
	}
	b, _ := json.Marshal(u)
	if !strings.Contains(string(b), `"kind":"over_max_tokens","requests":1,"example_index":0,"tokens":2147483648,"max_tokens":128`) {
		t.Errorf("sidecar usage %s", b)
	}
	out.Reset()
	WriteUsageNotes(&out, NewSidecarUsage(metrics.CheckUsage(countedLog([]metrics.RequestResult{ok(5, 5, metrics.UsageChunk)}, []int{5}), nil, nil)))
	if out.Len() != 0 {
		t.Errorf("agreeing counts printed %q", out.String())
	}
}

func TestReportShowsErrorsFirst(t *testing.T) {
	result, _ := json.Marshal(map[string]any{"duration": 1.0, "completed": 0.0, "failed": 3.0})
	sidecar, _ := json.Marshal(Sidecar{Errors: NewSidecarErrors(metrics.GroupErrors(metrics.LogOf(failedRun(3, 0)...)), "http://h/v1", nil)})
	r, err := ParseReportRun("run", result, sidecar)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteReport(&out, []*ReportRun{r}, ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	errorsAt, distAt := strings.Index(page, `id="errors"`), strings.Index(page, `id="over-time"`)
	if errorsAt < 0 || distAt < 0 || errorsAt > distAt {
		t.Fatalf("errors table at %d, over-time at %d: want the table before the charts", errorsAt, distAt)
	}
	for _, part := range []string{"All 3 requests failed", "<td class=\"num\">404</td><td>Not Found</td><td>The model `other-model` does not exist.</td><td>#0</td>"} {
		if !strings.Contains(page, part) {
			t.Errorf("page lacks %q", part)
		}
	}
}

// countedLog is results with each one's output length (Python's count)
// set to lens[i], as the tokenizer's count after the run sets it.
func countedLog(results []metrics.RequestResult, lens []int) *metrics.Log {
	for i := range results {
		results[i].TextTokens, results[i].TextCounted = lens[i], true
	}
	return metrics.LogOf(results...)
}
