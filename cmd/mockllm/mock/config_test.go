package mock

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"port", Config{Port: 70000}, "--port 70000"},
		{"max model len", Config{MaxModelLen: -1}, "--max-model-len -1"},
		{"ttft", Config{TTFT: -time.Millisecond}, "--ttft-ms"},
		{"prefill", Config{PrefillPerToken: -1}, "--prefill-us-per-token"},
		{"itl", Config{ITL: -1}, "--itl-ms"},
		{"decode-step period", Config{Mode: DecodeStep}, "at least 10µs"},
		{"jitter", Config{Jitter: -1}, "--jitter-ms"},
		{"timer slack", Config{TimerSlack: -1}, "--timer-slack-us"},
		{"max num seqs", Config{MaxNumSeqs: -1}, "--max-num-seqs -1"},
		{"default max tokens", Config{DefaultMaxTokens: -1}, "--default-max-tokens -1"},
		{"embedding dim", Config{EmbeddingDim: -1}, "--embedding-dim -1"},
		{"spec decode tokens", Config{SpecDecodeTokens: -1}, "--spec-decode-tokens -1"},
		{"spec decode acceptance", Config{SpecDecodeAcceptance: 2}, "--spec-decode-acceptance 2"},
		{"event loops", Config{EventLoops: -1}, "--event-loops -1"},
		{"writer priority", Config{WriterFIFOPriority: 100}, "--writer-fifo-priority 100: want 0"},
		{"negative writer priority", Config{WriterFIFOPriority: -1}, "--writer-fifo-priority -1"},
		{"mode", Config{Mode: 7}, "mode Mode(7)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.setDefaults()
			err := tt.cfg.validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	ok := Config{}
	ok.setDefaults()
	if err := ok.validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
	for _, s := range []string{"per-stream", "decode-step"} {
		if m, err := ParseMode(s); err != nil || m.String() != s {
			t.Errorf("ParseMode(%q) = %v, %v", s, m, err)
		}
	}
}

// TestTimerSlackBatches: with a slack far above the token gap, tokens go
// out in batches: none before it is due, each after the one before, and
// most only once the next one is due too (one wake-up sends them all). How
// late a batch leaves is BenchmarkTimerSlackLateness's question.
func TestTimerSlackBatches(t *testing.T) {
	truth := t.TempDir() + "/truth.log"
	const slack = 30 * time.Millisecond
	srv, base := startServer(t, Config{ITL: time.Millisecond, TimerSlack: slack, TruthLog: truth})
	runStreams(t, base, 1, 0, `{"prompt":"a","max_tokens":40,"stream":true}`)
	r := closeAndRead(t, srv, truth)[0]
	if len(r.Tokens) != 40 {
		t.Fatalf("%d tokens, want 40", len(r.Tokens))
	}
	checkCausal(t, r)
	if held := heldForNext(r.Tokens); held < 20 {
		t.Errorf("only %d of 40 tokens left after the next one was due: no batching", held)
	}
}

// BenchmarkTimerSlackLateness reports how late TestTimerSlackBatches's
// tokens leave (1 ms apart, 30 ms slack): a batch should leave within the
// slack of its first token's due time.
func BenchmarkTimerSlackLateness(b *testing.B) {
	const slack = 30 * time.Millisecond
	var late []int64
	for b.Loop() {
		truth := b.TempDir() + "/truth.log"
		srv, base := startServer(b, Config{ITL: time.Millisecond, TimerSlack: slack, TruthLog: truth})
		runStreams(b, base, 1, 0, `{"prompt":"a","max_tokens":40,"stream":true}`)
		for _, tok := range closeAndRead(b, srv, truth)[0].Tokens {
			late = append(late, tok.SentNs-tok.IntendedNs)
		}
	}
	reportLateness(b, late, slack)
}
