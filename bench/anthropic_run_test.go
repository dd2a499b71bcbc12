package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
)

// anthropicResult is what the end-to-end tests read of a result file.
type anthropicResult struct {
	Completed  int       `json:"completed"`
	Failed     int       `json:"failed"`
	InputLens  []int     `json:"input_lens"`
	OutputLens []int     `json:"output_lens"`
	ITLs       [][]any   `json:"itls"`
	TTFTs      []float64 `json:"ttfts"`
	Errors     []string  `json:"errors"`
}

// runAnthropic runs --backend anthropic-messages (its default endpoint,
// /v1/messages) against a mock with cfg and its truth log, and returns the
// result, the sidecar, the mock's counters and its truth log by request
// id.
func runAnthropic(t *testing.T, cfg mock.Config, args ...string) (anthropicResult, report.Sidecar, mock.Stats, map[string]mock.TruthRequest) {
	t.Helper()
	dir := t.TempDir()
	cfg.TTFT, cfg.ITL, cfg.TruthLog = 2*time.Millisecond, time.Millisecond, filepath.Join(dir, "truth.log")
	srv := startTinyMock(t, cfg)
	args = append([]string{"--backend", "anthropic-messages", "--dataset-name", "random", "--num-prompts", "6",
		"--random-input-len", "16", "--max-concurrency", "3", "--request-id-prefix", "anth-",
		"--save-result", "--save-detailed", "--result-dir", dir, "--result-filename", "r.json"}, args...)
	stdout, stderr, err := runAt(t, context.Background(), "http://"+srv.Addr(), args...)
	if err != nil {
		t.Fatalf("Run: %v\n%s\n%s", err, stdout, stderr)
	}
	stats := srv.Stats()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	var res anthropicResult
	var sc report.Sidecar
	for name, v := range map[string]any{"r.json": &res, "r.stampede.json": &sc} {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	truth, err := mock.ReadTruthLog(cfg.TruthLog)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]mock.TruthRequest{}
	for _, r := range truth {
		byID[r.RequestID] = r
	}
	return res, sc, stats, byID
}

// TestAnthropicRunAgainstMock: every request's counts are the server's
// (output tokens from message_delta, input tokens from message_start, as
// the mock counted them), and its token events are exactly the deltas the
// mock's truth log says it wrote, one ITL per later delta.
func TestAnthropicRunAgainstMock(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  mock.Config
		args []string
	}{
		{"one token a delta", mock.Config{}, nil},
		{"two tokens a delta", mock.Config{TokensPerChunk: 2}, nil},
		{"a thinking model", mock.Config{ReasoningTokens: 2}, []string{"--reasoning-metrics"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Output lengths vary, so a request matched to the wrong
			// truth record shows.
			res, sc, stats, truth := runAnthropic(t, tc.cfg, append([]string{"--random-output-len", "8", "--random-range-ratio", "0.5"}, tc.args...)...)
			if res.Completed != 6 || res.Failed != 0 {
				t.Fatalf("completed %d, failed %d: %v", res.Completed, res.Failed, res.Errors)
			}
			inputs, outputs := 0, 0
			for i := range res.OutputLens {
				tr, ok := truth["anth-"+strconv.Itoa(i)]
				if !ok {
					t.Fatalf("request %d is not in the truth log", i)
				}
				sent := 0
				for _, tok := range tr.Tokens {
					sent += tok.Tokens
				}
				if res.OutputLens[i] != sent {
					t.Errorf("request %d: %d output tokens, the mock sent %d", i, res.OutputLens[i], sent)
				}
				if events := len(res.ITLs[i]) + 1; events != len(tr.Tokens) {
					t.Errorf("request %d: %d token events, the mock wrote %d deltas", i, events, len(tr.Tokens))
				}
				inputs += res.InputLens[i]
				outputs += res.OutputLens[i]
			}
			if uint64(inputs) != stats.PromptTokens || uint64(outputs) != stats.Tokens {
				t.Errorf("input and output tokens %d, %d; the mock counted %d, %d", inputs, outputs, stats.PromptTokens, stats.Tokens)
			}
			if tc.cfg.ReasoningTokens > 0 {
				x := sc.Reasoning
				if x == nil || x.WithReasoning != 6 || x.ReasoningSource != "chunks" {
					t.Fatalf("reasoning account %+v", x)
				}
				for _, r := range x.PerRequest {
					if r.ReasoningChunks != 2 || !(r.FirstAnswerNs >= r.TTFTNs) {
						t.Errorf("request %d: %d reasoning chunks, first answer at %d ns, first token at %d", r.Index, r.ReasoningChunks, r.FirstAnswerNs, r.TTFTNs)
					}
				}
			}
		})
	}
}

// TestAnthropicToolCallsAgainstMock: tool_use blocks are counted as tool
// calls, their input_json deltas as tool-call chunks, and no request has
// answer text. (A first tool call read with the thinking delta before it
// shares its stamp, so it may be at TTFT.)
func TestAnthropicToolCallsAgainstMock(t *testing.T) {
	res, sc, _, _ := runAnthropic(t, mock.Config{ReasoningTokens: 1, ToolCalls: 2}, "--random-output-len", "5")
	x := sc.Reasoning
	if res.Completed != 6 || x == nil || x.ToolCalls != 12 || x.WithToolCalls != 6 || x.ToolCallChunks != 6*4 {
		t.Fatalf("completed %d, reasoning account %+v", res.Completed, x)
	}
	for _, r := range x.PerRequest {
		if r.FirstAnswerNs != -1 || !(r.FirstToolCallNs >= r.TTFTNs) || r.ToolCalls != 2 {
			t.Errorf("request %d: %+v", r.Index, r)
		}
	}
}

// TestAnthropicErrorEventsFail: an error event fails its request with the
// server's type and message, though tokens came before it; the others
// succeed.
func TestAnthropicErrorEventsFail(t *testing.T) {
	f, err := mock.ParseFault("error-event:every=3,at=2")
	if err != nil {
		t.Fatal(err)
	}
	res, _, _, _ := runAnthropic(t, mock.Config{Faults: []mock.Fault{f}}, "--random-output-len", "6")
	if res.Completed != 4 || res.Failed != 2 {
		t.Fatalf("completed %d, failed %d", res.Completed, res.Failed)
	}
	failed := 0
	for _, e := range res.Errors {
		if e == "" {
			continue
		}
		failed++
		if !strings.HasPrefix(e, "the server sent an error event: overloaded_error: injected fault: error-event (") {
			t.Errorf("error %q", e)
		}
	}
	if failed != 2 {
		t.Errorf("errors %q", res.Errors)
	}
}
