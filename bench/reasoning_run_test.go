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

// A run against the mock's reasoning model, for chat and for the
// Responses API: every request thinks for 3 tokens, then answers in 2
// (or calls 2 tools over 4 tokens). Python's block counts the reasoning
// chunks as tokens (TTFT at the first reasoning chunk); the first answer
// comes later in every request, after exactly the reasoning chunks the
// mock sent; and the block is Python's whether --reasoning-metrics is
// given or not.
func TestReasoningRunAgainstMock(t *testing.T) {
	for _, tc := range []struct {
		name, backend, endpoint string
		cfg                     mock.Config
		output                  int
		wantSource              string
		wantCalls               int
	}{
		{"chat reasoning", "openai-chat", "/v1/chat/completions", mock.Config{ReasoningTokens: 3}, 5, "chunks", 0},
		{"chat tool calls", "openai-chat", "/v1/chat/completions", mock.Config{ReasoningTokens: 3, ToolCalls: 2}, 7, "chunks", 2},
		{"responses reasoning", "openai-responses", "/v1/responses", mock.Config{ReasoningTokens: 3}, 5, "tokens", 0},
		{"responses tool calls", "openai-responses", "/v1/responses", mock.Config{ReasoningTokens: 3, ToolCalls: 2}, 7, "tokens", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.cfg.TTFT, tc.cfg.ITL = 2*time.Millisecond, time.Millisecond
			args := []string{"--backend", tc.backend, "--endpoint", tc.endpoint, "--dataset-name", "random", "--num-prompts", "4",
				"--random-input-len", "16", "--random-output-len", strconv.Itoa(tc.output), "--ignore-eos", "--max-concurrency", "2",
				"--save-result", "--save-detailed", "--result-dir", dir}
			plain, _, err := runAgainstMock(t, context.Background(), tc.cfg, append(args, "--result-filename", "plain.json")...)
			if err != nil {
				t.Fatal(err)
			}
			stdout, stderr, err := runAgainstMock(t, context.Background(), tc.cfg, append(args, "--result-filename", "r.json", "--reasoning-metrics")...)
			if err != nil {
				t.Fatalf("Run: %v\n%s\n%s", err, stdout, stderr)
			}
			block, extra, found := strings.Cut(stdout, "="+report.ReasoningTitle)
			if !found {
				t.Fatalf("no reasoning block:\n%s", stdout)
			}
			if got, want := lineLabels(block), lineLabels(plain); strings.Join(got[:len(got)-1], "\n") != strings.Join(want, "\n") {
				t.Errorf("Python's block changed with --reasoning-metrics:\n%s\nwithout:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if !strings.Contains(block, "Successful requests:                     4 ") || !strings.Contains(extra, "Mean TTFAT (ms):") {
				t.Errorf("blocks:\n%s", stdout)
			}

			var result struct {
				OutputLens []int     `json:"output_lens"`
				ITLs       [][]any   `json:"itls"`
				TTFTs      []float64 `json:"ttfts"`
			}
			raw, err := os.ReadFile(filepath.Join(dir, "r.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &result); err != nil {
				t.Fatal(err)
			}
			var sc report.Sidecar
			if raw, err = os.ReadFile(filepath.Join(dir, "r.stampede.json")); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &sc); err != nil || sc.Reasoning == nil {
				t.Fatalf("sidecar reasoning missing: %v\n%s", err, raw)
			}
			x := sc.Reasoning
			if x.Requests != 4 || x.WithReasoning != 4 || x.ReasoningSource != tc.wantSource || x.ToolCalls != 4*tc.wantCalls || len(x.PerRequest) != 4 {
				t.Fatalf("reasoning account %+v", x)
			}
			for _, r := range x.PerRequest {
				// Every output token is one event (the chat role chunk
				// adds one), so the ITLs count the events.
				events := len(result.ITLs[r.Index]) + 1
				if result.OutputLens[r.Index] != tc.output {
					t.Errorf("request %d: %d output tokens, want %d", r.Index, result.OutputLens[r.Index], tc.output)
				}
				if want := 3; r.ReasoningChunks != want {
					t.Errorf("request %d: %d reasoning chunks, want %d", r.Index, r.ReasoningChunks, want)
				}
				if tc.wantSource == "tokens" && r.ReasoningTokens != 3 {
					t.Errorf("request %d: reasoning_tokens %d, want 3", r.Index, r.ReasoningTokens)
				}
				if float64(r.TTFTNs)/1e9 != result.TTFTs[r.Index] {
					t.Errorf("request %d: sidecar TTFT %d, result %v", r.Index, r.TTFTNs, result.TTFTs[r.Index])
				}
				switch {
				case tc.wantCalls == 0 && !(r.FirstAnswerNs >= r.TTFTNs):
					t.Errorf("request %d: first answer at %d ns, before the first token at %d", r.Index, r.FirstAnswerNs, r.TTFTNs)
				case tc.wantCalls > 0 && (r.FirstAnswerNs != -1 || !(r.FirstToolCallNs >= r.TTFTNs) || r.ToolCalls != tc.wantCalls || r.ToolCallChunks != 4):
					t.Errorf("request %d: tool calls %+v", r.Index, r)
				}
				if events < tc.output {
					t.Errorf("request %d: %d token events, want at least %d", r.Index, events, tc.output)
				}
			}
		})
	}
}
