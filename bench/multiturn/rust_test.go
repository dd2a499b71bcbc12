package multiturn

import (
	"reflect"
	"testing"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
)

func rustPlan(numPrompts, turns, lo, hi int) *plan.Plan {
	p := &plan.Plan{}
	p.NumPrompts, p.Seed, p.RandomInputLen, p.RandomOutputLen = numPrompts, 3, 40, 8
	p.MultiTurnNumTurns, p.MultiTurnMinTurns, p.MultiTurnMaxTurns = turns, lo, hi
	return p
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// The Rust client's synthetic conversations: seeded, turn counts in
// [min, max] (0 standing for --multi-turn-num-turns), user turns only,
// and with a global prefix ratio every conversation's turns open alike.
func TestRustConversations(t *testing.T) {
	tok := mock.NewMockTokenizer()
	p := rustPlan(40, 3, 2, 5)
	a, err := RustConversations(p, tok)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := RustConversations(p, tok)
	if !reflect.DeepEqual(a, b) {
		t.Error("the same seed gave other conversations")
	}
	seen := map[int]bool{}
	for _, c := range a {
		n := c.Turns()
		seen[n] = true
		if n < 2 || n > 5 || n != len(c.Messages) {
			t.Errorf("%s: %d turns in %d messages, want 2 to 5 user turns", c.ID, n, len(c.Messages))
		}
		for k, m := range c.Messages {
			if got := len(tok.Encode(nil, m.Content, false)); got != p.RandomInputLen {
				t.Errorf("%s turn %d: %d tokens, want --random-input-len %d", c.ID, k+1, got, p.RandomInputLen)
			}
		}
	}
	if len(seen) < 3 {
		t.Errorf("turn counts %v: want a spread over [2, 5]", seen)
	}
	fixed, _ := RustConversations(rustPlan(5, 4, 0, 0), tok)
	for _, c := range fixed {
		if c.Turns() != 4 {
			t.Errorf("%s: %d turns, want --multi-turn-num-turns 4", c.ID, c.Turns())
		}
	}

	plain := fixed
	p = rustPlan(5, 4, 0, 0)
	p.MultiTurnPrefixGlobalRatio = 0.5
	shared, _ := RustConversations(p, tok)
	if !rustPrefixSharing(p) || !RustOptions(p).NoHistory {
		t.Error("a prefix ratio does not turn the history off")
	}
	if s, u := commonPrefix(shared[0].Messages[1].Content, shared[3].Messages[2].Content), commonPrefix(plain[0].Messages[1].Content, plain[3].Messages[2].Content); s < 20 || s <= u {
		t.Errorf("shared prefix %d bytes (unshared %d): want the turns to open alike", s, u)
	}
}

// RustOptions: a client per concurrent conversation, min_tokens and
// max_tokens the output length, think time the delay.
func TestRustOptions(t *testing.T) {
	p := rustPlan(10, 3, 0, 0)
	p.MultiTurnDelayMs = 500
	four := 4
	p.MultiTurnConcurrency = &four
	o := RustOptions(p)
	if o.NumClients != 4 || o.MaxActiveConversations != 4 || o.LimitMaxTokens != 8 || o.LimitMinTokens != 8 ||
		o.ThinkTime == nil || o.ThinkTime.Value != 0.5 || !o.NoEarlyStop || o.NoHistory || o.SessionHeader != "X-Session-ID" {
		t.Errorf("options %+v", o)
	}
	if o := RustOptions(rustPlan(10, 3, 0, 0)); o.NumClients != 10 || o.ThinkTime != nil {
		t.Errorf("defaults: %d clients, think time %v; want --num-prompts and none", o.NumClients, o.ThinkTime)
	}
}
