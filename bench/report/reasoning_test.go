package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/metrics"
)

func TestReasoningBlockAndSidecar(t *testing.T) {
	results := []metrics.RequestResult{
		{Index: 0, Success: true, TTFTNs: 10e6, Reasoning: metrics.Reasoning{FirstAnswerNs: 50e6, ReasoningChunks: 4, ReasoningTokens: -1, FirstToolCallNs: 30e6, ToolCallChunks: 2, ToolCalls: 1}},
		{Index: 1, Success: true, TTFTNs: 20e6, Reasoning: metrics.Reasoning{FirstAnswerNs: 80e6, ReasoningChunks: 6, ReasoningTokens: -1, FirstToolCallNs: -1}},
		{Index: 2, Error: "x", Reasoning: metrics.Reasoning{FirstAnswerNs: -1, ReasoningChunks: 9, ReasoningTokens: -1, FirstToolCallNs: -1}},
	}
	st := metrics.ComputeReasoning(metrics.LogOf(results...), []float64{99})
	var out bytes.Buffer
	if err := WriteReasoning(&out, st); err != nil {
		t.Fatal(err)
	}
	block := out.String()
	for _, line := range []string{
		"With reasoning:                          2         \n",
		"Tool calls opened:                       1         \n",
		"Median TTFAT (ms):                       65.00     \n",
		"Mean reasoning time (ms):                50.00     \n",
		"Max reasoning chunks:                    6.00      \n",
		"Mean TTFTC (ms):                         30.00     \n",
	} {
		if !strings.Contains(block, line) {
			t.Errorf("block lacks %q:\n%s", line, block)
		}
	}
	sc := NewSidecarReasoning(metrics.LogOf(results...), st, true)
	if sc.ReasoningSource != "chunks" || len(sc.PerRequest) != 2 || sc.PerRequest[1].FirstAnswerNs != 80e6 || sc.ReasoningPerRequest.Mean != 5 {
		t.Fatalf("sidecar %+v", sc)
	}
	out.Reset()
	if err := WriteReasoning(&out, nil); err != nil || !strings.Contains(out.String(), "No request streamed reasoning or tool calls.") {
		t.Fatalf("empty block: %q, %v", out.String(), err)
	}
}
