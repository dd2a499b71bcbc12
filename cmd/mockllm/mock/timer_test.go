package mock

import (
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
// token, sends nothing early and nothing much more than a slack late.
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
	sent, late := 0, 0
	for _, r := range reqs {
		for _, tok := range r.Tokens {
			sent++
			if tok.SentNs < tok.IntendedNs {
				t.Errorf("request %d token %d sent %v early", r.Seq, tok.Index, time.Duration(tok.IntendedNs-tok.SentNs))
			}
			// A loaded test machine may delay a wake-up; most tokens
			// must still be within the slack.
			if tok.SentNs-tok.IntendedNs > int64(slack+time.Millisecond) {
				late++
			}
		}
	}
	if sent != streams*tokens {
		t.Fatalf("%d tokens sent, want %d", sent, streams*tokens)
	}
	if late > sent/10 {
		t.Errorf("%d of %d tokens more than %v past due", late, sent, slack+time.Millisecond)
	}
	// Arming happens at least once per stream start and end, not once per
	// token.
	if arms := srv.w.arms; arms > uint64(sent/3) {
		t.Errorf("timer armed %d times for %d tokens", arms, sent)
	}
}
