package multiturn

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/endpoint"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
)

// conversationsFile writes n conversations of turns user turns: a long
// first question (the context a prefix cache keeps), short ones after.
func conversationsFile(t *testing.T, n, turns int) string {
	t.Helper()
	var items []Conversation
	for i := range n {
		c := Conversation{ID: fmt.Sprintf("c%d", i)}
		for k := range turns {
			q := fmt.Sprintf("question %d of %d:", k, i)
			if k == 0 {
				q += strings.Repeat(" context", 500)
			}
			c.Messages = append(c.Messages, Message{"user", q}, Message{"assistant", "dataset answer"})
		}
		items = append(items, c)
	}
	data, err := json.Marshal(items)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "convs.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func startMock(t *testing.T, prefixCache string) *mock.Server {
	t.Helper()
	srv, err := mock.Start(mock.Config{
		TTFT: time.Millisecond, ITL: 100 * time.Microsecond, PrefillPerToken: 20 * time.Microsecond,
		MaxModelLen: 100_000, PrefixCache: prefixCache,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// runAgainst runs multiturn against srv with args after the server's.
func runAgainst(t *testing.T, srv *mock.Server, args ...string) (*Options, *Report) {
	t.Helper()
	all := append([]string{"--base-url", "http://" + srv.Addr(), "--model", "mock-llm", "--shards", "1"}, args...)
	opts, err := ParseArgs(all)
	if err != nil {
		t.Fatal(err)
	}
	in, err := ReadInput(opts.InputFile)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Prepare(opts, in, "mock-llm", mock.NewMockTokenizer())
	if err != nil {
		t.Fatal(err)
	}
	ep, err := endpoint.Open(context.Background(), opts.Serve, io.Discard, io.Discard, false)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), opts, plan, ep)
	if err != nil {
		t.Fatal(err)
	}
	r := BuildReport(opts, plan, out, time.Now())
	r.Print(io.Discard)
	if _, err := r.Save(opts, out); err != nil {
		t.Fatal(err)
	}
	return opts, r
}

// With a prefix cache, a conversation's later turns find their history
// cached and their TTFT falls below the first turn's; without one, every
// turn pays for its whole history. Both are causal (prefill counts the
// uncached tokens), so the test compares the two runs side by side and
// never a duration against a threshold.
func TestPrefixCacheLowersLaterTurnsTTFT(t *testing.T) {
	input := conversationsFile(t, 4, 3)
	args := []string{"--input-file", input, "--num-clients", "2", "--limit-max-tokens", "4", "--no-early-stop"}
	_, cached := runAgainst(t, startMock(t, mock.PrefixCacheGlobal), args...)
	_, cold := runAgainst(t, startMock(t, mock.PrefixCacheOff), args...)
	for _, r := range []*Report{cached, cold} {
		if r.Failed != 0 || r.Completed != 12 || r.CompletedConversations != 4 || len(r.PerTurn) != 3 {
			t.Fatalf("run: %d ok, %d failed, %d conversations done, %d turn rows; want 12, 0, 4, 3", r.Completed, r.Failed, r.CompletedConversations, len(r.PerTurn))
		}
	}
	for k := 1; k < 3; k++ {
		if c, n := cached.PerTurn[k].TTFT.Median, cold.PerTurn[k].TTFT.Median; c >= n {
			t.Errorf("turn %d: median TTFT %.2f ms with the prefix cache, %.2f ms without; want lower with it", k+1, c, n)
		}
		if c, first := cached.PerTurn[k].TTFT.Median, cached.PerTurn[0].TTFT.Median; c >= first {
			t.Errorf("cached run: turn %d median TTFT %.2f ms, turn 1 %.2f ms; want the later turn faster", k+1, c, first)
		}
		if in, before := cold.PerTurn[k].MeanInputTokens, cold.PerTurn[k-1].MeanInputTokens; in <= before {
			t.Errorf("turn %d: %.0f prompt tokens on average, turn %d %.0f; want the history to grow", k+1, in, k, before)
		}
	}
}

// Every turn goes out once, in order within its conversation, and each
// carries the one before it: the server's prompt count grows by the last
// answer's tokens and the new question's.
func TestEveryTurnSentOnceWithItsHistory(t *testing.T) {
	input := conversationsFile(t, 3, 4)
	dir := t.TempDir()
	rows, answered := filepath.Join(dir, "rows.json"), filepath.Join(dir, "answered.json")
	_, r := runAgainst(t, startMock(t, mock.PrefixCacheSession), "--input-file", input, "--num-clients", "2",
		"--max-active-conversations", "3", "--limit-max-tokens", "3", "--think-time-sec", "uniform:0,0.01",
		"--no-early-stop", "--stats-json-output", rows, "--output-file", answered, "--seed", "7")
	var got []Row
	readJSON(t, rows, &got)
	if len(got) != 12 || r.Completed != 12 {
		t.Fatalf("%d rows, %d completed; want 12", len(got), r.Completed)
	}
	in, _ := ReadInput(input)
	tok := mock.NewMockTokenizer()
	byConv := map[string][]Row{}
	for _, row := range got {
		byConv[row.ConversationID] = append(byConv[row.ConversationID], row)
	}
	for ci, conv := range in.Conversations {
		turns := byConv[conv.ID]
		slices.SortFunc(turns, func(a, b Row) int { return a.Turn - b.Turn })
		for k, row := range turns {
			if row.Turn != k+1 || !row.Success {
				t.Fatalf("%s: row %d is turn %d (success %v); want each of turns 1..4 once", conv.ID, k, row.Turn, row.Success)
			}
			if k == 0 {
				continue
			}
			prev := turns[k-1]
			if row.StartSec < prev.StartSec+prev.E2ELMs/1000 {
				t.Errorf("%s turn %d started at %.4f s, before turn %d ended", conv.ID, k+1, row.StartSec, k)
			}
			u, _, _ := in.Conversations[ci].turnAt(k)
			question := len(tok.Encode(nil, in.Conversations[ci].Messages[u].Content, false))
			if want := prev.InputTokens + prev.OutputTokens + question; row.InputTokens != want {
				t.Errorf("%s turn %d: %d prompt tokens; want %d (previous prompt %d + answer %d + question %d)",
					conv.ID, k+1, row.InputTokens, want, prev.InputTokens, prev.OutputTokens, question)
			}
		}
	}
	var convs []Conversation
	readJSON(t, answered, &convs)
	for _, c := range convs {
		if len(c.Messages) != 8 {
			t.Fatalf("%s: %d messages answered; want 8", c.ID, len(c.Messages))
		}
		for i, m := range c.Messages {
			if i%2 == 1 && (m.Role != "assistant" || m.Content == "" || m.Content == "dataset answer") {
				t.Errorf("%s message %d: %+v; want the server's answer", c.ID, i, m)
			}
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}
