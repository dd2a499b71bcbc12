package engine

import (
	"sync/atomic"
	"testing"
	"time"
)

// The sampler keeps the sample with the most streams open (the largest
// resident set among its ties) and the largest resident set with the
// streams open at its first sample, from an injected reader: no clock.
func TestRSSSamplerKeepsMostOpenAndPeak(t *testing.T) {
	type sample struct {
		rss  int64
		ok   bool
		open int
	}
	samples := []sample{
		{100, true, 0},
		{150, true, 10},
		{0, false, 99}, // unreadable: not a sample
		{180, true, 40},
		{170, true, 40},
		{190, true, 40},
		{260, true, 5}, // the peak, after most streams closed
		{260, true, 2},
		{240, true, 0},
	}
	k := 0
	s := &rssSampler{
		read: func() (int64, bool) { return samples[k].rss, samples[k].ok },
		open: func() int { return samples[k].open },
		held: func() (int64, int64) { return int64(k), 10 * int64(k) },
	}
	for k = range samples {
		s.sample()
	}
	// The base is the first sample read; the log's and the window's bytes
	// are those of the peak's first sample (k = 6 here).
	want := MemorySamples{Samples: 8, MostOpen: 40, RSSAtMostOpen: 190, PeakRSS: 260, OpenAtPeak: 5,
		BaseRSS: samples[0].rss, LogAtPeak: 6, WindowAtPeak: 60}
	if s.out != want {
		t.Errorf("samples %+v, want %+v", s.out, want)
	}
}

// A run that never had a stream open still says what the process held.
func TestRSSSamplerNoStreams(t *testing.T) {
	rss := []int64{50, 70, 60}
	k := 0
	s := &rssSampler{read: func() (int64, bool) { return rss[k], true }, open: func() int { return 0 }}
	for k = range rss {
		s.sample()
	}
	if want := (MemorySamples{Samples: 3, RSSAtMostOpen: 70, PeakRSS: 70, BaseRSS: 50}); s.out != want {
		t.Errorf("samples %+v, want %+v", s.out, want)
	}
}

func TestStatmRSS(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"6143 1024 512 100 0 900 0\n", 1024 * 4096, true},
		{"6143\n", 0, false},
		{"6143 x 512\n", 0, false},
		{"6143 -3 512\n", 0, false},
		{"", 0, false},
	}
	for _, c := range cases {
		if got, ok := statmRSS([]byte(c.in), 4096); got != c.want || ok != c.ok {
			t.Errorf("statmRSS(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	if rss, ok := readStatmRSS(); !ok || rss <= 0 {
		t.Errorf("this process's resident set: %d, %v", rss, ok)
	}
}

// The running sampler samples at its start and at finish, whatever the
// ticks in between (the machine may stall), and stops: finish returns, a
// second finish changes nothing, and open is not called after it.
func TestRSSSamplerStartFinish(t *testing.T) {
	var calls, afterFinish atomic.Int64
	var finished atomic.Bool
	s := startRSSSampler(func() int {
		calls.Add(1)
		if finished.Load() {
			afterFinish.Add(1)
		}
		return 3
	}, nil, time.Millisecond)
	for calls.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	m := s.finish()
	finished.Store(true)
	if m.Samples < 2 || m.Interval != time.Millisecond || m.MostOpen != 3 || m.PeakRSS <= 0 {
		t.Fatalf("samples %+v, want at least 2 of 3 open streams", m)
	}
	if again := s.finish(); again != m {
		t.Errorf("a second finish gave %+v, want %+v", again, m)
	}
	time.Sleep(5 * time.Millisecond)
	if n := afterFinish.Load(); n != 0 {
		t.Errorf("%d samples after finish", n)
	}
}
