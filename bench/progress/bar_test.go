package progress

import (
	"bytes"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestFormatMeter(t *testing.T) {
	tests := []struct {
		n, total int
		elapsed  float64
		rate     float64
		ncols    int
		want     string
	}{
		{0, 1000, 0, 0, 0, "  0%|          | 0/1000 [00:00<?, ?it/s]"},
		{1000, 1000, 12.3, 81.234, 0, "100%|██████████| 1000/1000 [00:12<00:00, 81.23it/s]"},
		{420, 1000, 5, 84.1, 0, " 42%|████▏     | 420/1000 [00:05<00:06, 84.10it/s]"},
		{1, 8, 2, 0.5, 0, " 12%|█▎        | 1/8 [00:02<00:14,  2.00s/it]"},
		{5, 100, 1, 5, 0, "  5%|▌         | 5/100 [00:01<00:19,  5.00it/s]"},
		{10, 20, 3725, 1, 0, " 50%|█████     | 10/20 [1:02:05<00:10,  1.00it/s]"},
		// With a known width the bar takes what the text leaves.
		{50, 100, 1, 50, 60, " 50%|███████████           | 50/100 [00:01<00:01, 50.00it/s]"},
		{50, 100, 1, 50, 10, " 50%|▌| 50/100 [00:01<00:01, 50.00it/s]"},
	}
	for _, tt := range tests {
		got := formatMeter(tt.n, tt.total, tt.elapsed, tt.rate, tt.ncols)
		if got != tt.want {
			t.Errorf("formatMeter(%d/%d, %vs, %v/s, ncols %d) =\n%q\nwant\n%q", tt.n, tt.total, tt.elapsed, tt.rate, tt.ncols, got, tt.want)
		}
		if tt.ncols > 20 && len([]rune(got)) != tt.ncols {
			t.Errorf("line has %d columns, want %d", len([]rune(got)), tt.ncols)
		}
	}
}

// fakeClock advances only when told.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func newTestProgress(w *bytes.Buffer, total int, disabled bool) (*Bar, *fakeClock) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	p := &Bar{w: w, total: total, disabled: disabled, now: clock.now}
	p.start, p.lastDraw = clock.t, clock.t
	p.draw(clock.t)
	return p, clock
}

func TestProgressRedrawsAndCloses(t *testing.T) {
	var out bytes.Buffer
	p, clock := newTestProgress(&out, 100, false)
	p.Set(10) // no time has passed: not redrawn
	if got := strings.Count(out.String(), "\r"); got != 1 {
		t.Fatalf("%d draws after an immediate Set, want 1: %q", got, out.String())
	}
	clock.t = clock.t.Add(time.Second)
	p.Set(20)
	clock.t = clock.t.Add(time.Second)
	p.Set(30)
	clock.t = clock.t.Add(500 * time.Millisecond)
	p.n = 100
	p.Close()
	p.Close()
	want := "\r  0%|          | 0/100 [00:00<?, ?it/s]" +
		"\r 20%|██        | 20/100 [00:01<00:04, 20.00it/s]" +
		"\r 30%|███       | 30/100 [00:02<00:04, 14.12it/s]" +
		"\r100%|██████████| 100/100 [00:02<00:00, 51.36it/s]\n"
	if out.String() != want {
		t.Errorf("progress output =\n%q\nwant\n%q", out.String(), want)
	}
}

func TestProgressDisabled(t *testing.T) {
	var out bytes.Buffer
	p, clock := newTestProgress(&out, 10, true)
	clock.t = clock.t.Add(time.Second)
	p.Set(5)
	p.Close()
	if out.Len() != 0 {
		t.Errorf("disabled bar wrote %q", out.String())
	}
}

func TestProgressPoll(t *testing.T) {
	var out bytes.Buffer
	p := New(&out, 3, false)
	var done atomic.Int64
	stop := p.Poll(func() int { return int(done.Load()) }, time.Millisecond)
	done.Store(2)
	time.Sleep(5 * time.Millisecond)
	done.Store(3)
	stop()
	stop()
	if s := out.String(); !strings.HasSuffix(s, "\n") || !strings.Contains(s, "100%|██████████| 3/3 [") {
		t.Errorf("final line missing: %q", s)
	}
}
