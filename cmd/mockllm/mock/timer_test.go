package mock

import (
	"cmp"
	"slices"
	"testing"
	"time"
)

func TestTimerPassed(t *testing.T) {
	tests := []struct {
		name                 string
		fireNs, periodNs, at int64
		want                 int64
	}{
		{"disarmed stays disarmed", 0, 0, 500, 0},
		{"one-shot not yet due", 1000, 0, 999, 1000},
		{"one-shot gone off", 1000, 0, 1000, 0},
		{"periodic not yet due", 1000, 100, 999, 1000},
		{"periodic at its tick", 1000, 100, 1000, 1100},
		{"periodic within a period", 1000, 100, 1050, 1100},
		{"periodic several periods on", 1000, 100, 1350, 1400},
		{"periodic exactly on a later tick", 1000, 100, 1300, 1400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &writer{fireNs: tt.fireNs, periodNs: tt.periodNs}
			w.timerPassed(tt.at)
			if w.fireNs != tt.want {
				t.Errorf("fireNs = %d, want %d", w.fireNs, tt.want)
			}
		})
	}
}

// TestTimerWoke: waking from a one-shot timer disarms it even when the
// clock reads a little before its expiry; believing it still armed would
// leave the writer asleep for good.
func TestTimerWoke(t *testing.T) {
	clock := newMonoClock()
	ahead := clock.nowNs() + int64(time.Hour)
	tests := []struct {
		name             string
		fireNs, periodNs int64
		want             int64
	}{
		{"one-shot", ahead, 0, 0},
		{"periodic keeps its tick", ahead, 100, ahead},
		{"disarmed", 0, 100, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &writer{clock: clock, fireNs: tt.fireNs, periodNs: tt.periodNs}
			w.timerWoke()
			if w.fireNs != tt.want {
				t.Errorf("fireNs = %d, want %d", w.fireNs, tt.want)
			}
		})
	}
}

// TestPeriodicTimerBatches: with many streams a slack apart or closer,
// the per-stream clock keeps ticking without being re-armed for every
// token, sends nothing before it is due, each stream's tokens in order,
// and holds tokens back to send them together: most tokens leave only
// once the next token in the schedule is due too. How late tokens leave is
// BenchmarkTimerLateness's question; a loaded machine only makes the
// writer later, which batches more, never less.
func TestPeriodicTimerBatches(t *testing.T) {
	truth := t.TempDir() + "/truth.log"
	const (
		slack   = 2 * time.Millisecond
		streams = 20
		tokens  = 30
	)
	srv, base := startServer(t, Config{ITL: 5 * time.Millisecond, TimerSlack: slack, TruthLog: truth})
	runStreams(t, base, streams, 250*time.Microsecond, `{"prompt":"a","max_tokens":30,"stream":true}`)
	reqs := closeAndRead(t, srv, truth)
	var all []TruthToken
	for _, r := range reqs {
		checkCausal(t, r)
		all = append(all, r.Tokens...)
	}
	if len(all) != streams*tokens {
		t.Fatalf("%d tokens sent, want %d", len(all), streams*tokens)
	}
	if held := heldForNext(all); held < len(all)/3 {
		t.Errorf("only %d of %d tokens left after the next token in the schedule was due: no batching", held, len(all))
	}
	// Arming happens at least once per stream start and end, not once per
	// token.
	if arms := srv.w.arms; arms > uint64(len(all)/3) {
		t.Errorf("timer armed %d times for %d tokens", arms, len(all))
	}
}

// checkCausal holds a request's tokens to causality: each leaves no
// earlier than it is due, after the one before it, with consecutive
// indices and due times in order.
func checkCausal(t testing.TB, r TruthRequest) {
	t.Helper()
	for k, tok := range r.Tokens {
		if tok.Index != k {
			t.Errorf("request %d: token %d has index %d", r.Seq, k, tok.Index)
		}
		if tok.SentNs < tok.IntendedNs {
			t.Errorf("request %d token %d sent %v early", r.Seq, k, time.Duration(tok.IntendedNs-tok.SentNs))
		}
		if k == 0 {
			if tok.IntendedNs < r.ArrivalNs {
				t.Errorf("request %d: first token due at %d, before the request arrived at %d", r.Seq, tok.IntendedNs, r.ArrivalNs)
			}
			continue
		}
		prev := r.Tokens[k-1]
		if tok.IntendedNs <= prev.IntendedNs || tok.SentNs < prev.SentNs {
			t.Errorf("request %d token %d (due %d, sent %d) not after token %d (due %d, sent %d)",
				r.Seq, k, tok.IntendedNs, tok.SentNs, k-1, prev.IntendedNs, prev.SentNs)
		}
	}
}

// heldForNext counts the tokens that left no earlier than the next later
// due time in the whole schedule: tokens the writer kept back until
// another was due, so that both went out in one wake-up. A writer that
// woke for every token on an idle machine sends each before the next is
// due.
func heldForNext(toks []TruthToken) int {
	toks = slices.Clone(toks)
	slices.SortFunc(toks, func(a, b TruthToken) int { return cmp.Compare(a.IntendedNs, b.IntendedNs) })
	held := 0
	for i, tok := range toks {
		j := i + 1
		for j < len(toks) && toks[j].IntendedNs == tok.IntendedNs {
			j++
		}
		if j < len(toks) && tok.SentNs >= toks[j].IntendedNs {
			held++
		}
	}
	return held
}

// BenchmarkTimerLateness runs TestPeriodicTimerBatches's schedule (20
// streams 250 µs apart, a token every 5 ms, 2 ms slack) and reports how
// late tokens left: the median and p99 in µs, and the share more than a
// slack plus 1 ms past due. Run it on an idle machine (or under
// flock /tmp/stampede-bench.lock): the figures are the machine's as much
// as the mock's.
func BenchmarkTimerLateness(b *testing.B) {
	const slack = 2 * time.Millisecond
	var late []int64
	for b.Loop() {
		truth := b.TempDir() + "/truth.log"
		srv, base := startServer(b, Config{ITL: 5 * time.Millisecond, TimerSlack: slack, TruthLog: truth})
		runStreams(b, base, 20, 250*time.Microsecond, `{"prompt":"a","max_tokens":30,"stream":true}`)
		for _, r := range closeAndRead(b, srv, truth) {
			for _, tok := range r.Tokens {
				late = append(late, tok.SentNs-tok.IntendedNs)
			}
		}
	}
	reportLateness(b, late, slack)
}

// reportLateness reports the median and p99 of late (ns) in µs, and the
// share of tokens more than slack + 1 ms past due.
func reportLateness(b *testing.B, late []int64, slack time.Duration) {
	if len(late) == 0 {
		return
	}
	slices.Sort(late)
	over := 0
	for _, d := range late {
		if d > int64(slack+time.Millisecond) {
			over++
		}
	}
	b.ReportMetric(float64(late[len(late)/2])/1e3, "p50-late-µs")
	b.ReportMetric(float64(late[len(late)*99/100])/1e3, "p99-late-µs")
	b.ReportMetric(float64(over)/float64(len(late)), "share-over-slack")
}
