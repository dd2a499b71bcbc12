package mock

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// runningCounts returns, for each token chunk of s, the increase of its
// usage.completion_tokens since the previous token chunk, and whether
// every token chunk carried one.
func runningCounts(s sseStream) (steps []int, all bool) {
	all = true
	last := 0
	for _, c := range s.chunks {
		if choices, _ := c["choices"].([]any); len(choices) == 0 {
			continue
		}
		u, ok := c["usage"].(map[string]any)
		if !ok {
			all = false
			continue
		}
		n := int(u["completion_tokens"].(float64))
		steps = append(steps, n-last)
		last = n
	}
	return steps, all
}

func TestTokensPerChunk(t *testing.T) {
	t.Parallel()
	truth := filepath.Join(t.TempDir(), "truth.log")
	srv, base := startServer(t, Config{ITL: time.Millisecond, TokensPerChunk: 3, TruthLog: truth})
	body := `{"prompt":"abcd","max_tokens":10,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`
	s := readSSE(t, post(t, base+"/v1/completions", body).Body)
	steps, all := runningCounts(s)
	if !all || fmt.Sprint(steps) != "[3 3 3 1]" || s.tokenEvents != 4 {
		t.Fatalf("running steps %v (all carried usage: %v), %d token events; want [3 3 3 1]", steps, all, s.tokenEvents)
	}
	if got := s.usage["completion_tokens"]; got != float64(10) {
		t.Errorf("final usage %v", s.usage)
	}
	// The text is every token's word: the same as one token per chunk.
	_, single := startServer(t, Config{ITL: time.Millisecond})
	one := readSSE(t, post(t, single+"/v1/completions", `{"prompt":"abcd","max_tokens":10,"stream":true}`).Body)
	if s.text != one.text || one.tokenEvents != 10 {
		t.Errorf("text %q over 4 chunks, %q over %d", s.text, one.text, one.tokenEvents)
	}
	reqs := closeAndRead(t, srv, truth)
	var carried []int
	for _, tok := range reqs[0].Tokens {
		carried = append(carried, tok.Tokens)
	}
	if fmt.Sprint(carried) != "[3 3 3 1]" {
		t.Errorf("truth log tokens per event %v, want [3 3 3 1]", carried)
	}
}

// TestRunningUsageOnlyWhenAsked: without continuous_usage_stats the
// chunks look as vLLM sends them, whatever the chunk size.
func TestRunningUsageOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, Config{ITL: time.Millisecond, TokensPerChunk: 2})
	for _, tc := range []struct{ path, body string }{
		{"/v1/completions", `{"prompt":"ab","max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"ab"}],"max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`},
		{"/v1/completions", `{"prompt":"ab","max_tokens":5,"stream":true,"stream_options":{"continuous_usage_stats":true}}`},
	} {
		s := readSSE(t, post(t, base+tc.path, tc.body).Body)
		if steps, _ := runningCounts(s); len(steps) != 0 {
			t.Errorf("%s %s: running usage %v without asking for it with include_usage", tc.path, tc.body, steps)
		}
	}
	// Chat with running usage: the role chunk counts no token.
	s := readSSE(t, post(t, base+"/v1/chat/completions",
		`{"messages":[{"role":"user","content":"ab"}],"max_tokens":5,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`).Body)
	if steps, all := runningCounts(s); !all || fmt.Sprint(steps) != "[0 2 2 1]" {
		t.Errorf("chat running steps %v (all: %v), want [0 2 2 1]", steps, all)
	}
}

// TestSpecDecodeStream: the chunks carry drafts accepted at the configured
// rate plus one, and the /metrics counters count exactly those drafts.
func TestSpecDecodeStream(t *testing.T) {
	t.Parallel()
	const k, accept, maxTokens, requests = 3, 0.6, 300, 4
	truth := filepath.Join(t.TempDir(), "truth.log")
	srv, base := startServer(t, Config{Model: "m", ITL: 100 * time.Microsecond, SpecDecodeTokens: k, SpecDecodeAcceptance: accept,
		SpecDecodeStream: true, TruthLog: truth, Seed: 5})
	var events, tokens int
	hist := map[int]int{}
	for i := range requests {
		body := `{"prompt":"abcd` + strconv.Itoa(i) + `","max_tokens":` + strconv.Itoa(maxTokens) +
			`,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`
		s := readSSE(t, post(t, base+"/v1/completions", body).Body)
		steps, all := runningCounts(s)
		if !all {
			t.Fatal("a chunk without running usage")
		}
		for j, n := range steps {
			if n < 1 || n > k+1 {
				t.Fatalf("chunk %d carried %d tokens, want 1..%d", j, n, k+1)
			}
			hist[n]++
			tokens += n
		}
		events += len(steps)
	}
	if tokens != requests*maxTokens {
		t.Fatalf("%d tokens in all, want %d", tokens, requests*maxTokens)
	}
	// Each step carries 1 + accepted drafts: mean 1 + a + a² + a³ = 2.176;
	// over ~550 steps its standard error is about 0.05.
	mean := float64(tokens) / float64(events)
	if want := 1 + accept + accept*accept + accept*accept*accept; mean < want-0.3 || mean > want+0.3 {
		t.Errorf("mean tokens per chunk %.3f, want about %.3f", mean, want)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	metric := func(name string) float64 {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\{[^}]*\} (\S+)$`).FindStringSubmatch(string(b))
		if m == nil {
			t.Fatalf("/metrics lacks %s:\n%s", name, b)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	drafts, accepted := metric("vllm:spec_decode_num_drafts_total"), metric("vllm:spec_decode_num_accepted_tokens_total")
	if int(drafts) != events || int(accepted) != tokens-events || metric("vllm:generation_tokens_total") != drafts+accepted {
		t.Errorf("counters: drafts %v accepted %v generation %v; the streams carried %d chunks, %d tokens",
			drafts, accepted, metric("vllm:generation_tokens_total"), events, tokens)
	}
	if draftTokens := metric("vllm:spec_decode_num_draft_tokens_total"); int(draftTokens) != k*events {
		t.Errorf("draft tokens %v, want %d", draftTokens, k*events)
	}
	// The truth log holds the same chunks.
	reqs := closeAndRead(t, srv, truth)
	logged := map[int]int{}
	for _, r := range reqs {
		for _, tok := range r.Tokens {
			logged[tok.Tokens]++
		}
	}
	if fmt.Sprint(logged) != fmt.Sprint(hist) {
		t.Errorf("truth log chunks by tokens %v, the streams %v", logged, hist)
	}
}

func TestChunkConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{SpecDecodeStream: true}, "--spec-decode-stream: needs --spec-decode-tokens"},
		{Config{TokensPerChunk: -1}, "--tokens-per-chunk -1"},
		{Config{TokensPerChunk: 2, SpecDecodeTokens: 2, SpecDecodeStream: true}, "choose one"},
	} {
		c := tc.cfg
		c.setDefaults()
		if err := c.validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
