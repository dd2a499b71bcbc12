package engine

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"time"
)

// MemorySamples is the process's resident set sampled while a run's
// streams were open, each sample with the streams open at that instant:
// what an open stream holds is seen where it is held, not in the peak of
// the whole process's life, which at 100,000 streams comes after the
// streams closed, with the results.
type MemorySamples struct {
	// Samples counts the samples taken, one every Interval from the
	// schedule's start until the streams closed, and one at each end.
	Samples  int
	Interval time.Duration
	// MostOpen is the most streams open at a sample and RSSAtMostOpen the
	// largest resident set among the samples with that many open (bytes).
	MostOpen      int
	RSSAtMostOpen int64
	// PeakRSS is the largest resident set of any sample and OpenAtPeak the
	// streams open at the first sample of that size.
	PeakRSS    int64
	OpenAtPeak int
	// Where the peak went: BaseRSS is the first sample's resident set
	// (before a stream opened: the binary, the runtime, the tokenizer,
	// the run's tables), and at the peak's sample LogAtPeak the bytes the
	// record log held in memory (its chunks and what it kept unwritten)
	// and WindowAtPeak the bytes of requests held for sending (the
	// prompt window). The rest of the peak over the base is the streams'
	// (their buffers and state) and the garbage collector's slack.
	BaseRSS, LogAtPeak, WindowAtPeak int64
}

// StreamsAtPeak is the peak's remainder over the base, the log and the
// window: the open streams' share, with the collector's slack.
func (m MemorySamples) StreamsAtPeak() int64 {
	return max(m.PeakRSS-m.BaseRSS-m.LogAtPeak-m.WindowAtPeak, 0)
}

// rssSampleInterval is how often the sampler reads the resident set: a
// read of /proc/self/statm costs a few µs, on its own goroutine, never a
// shard's.
const rssSampleInterval = 200 * time.Millisecond

// rssSampler takes the samples of MemorySamples from read (the resident
// set in bytes; false when it cannot be read) and open (the streams open
// now).
type rssSampler struct {
	read func() (int64, bool)
	open func() int
	// held, when set, gives the bytes the record log and the prompt
	// window hold now.
	held func() (log, window int64)
	out  MemorySamples
	stop chan struct{}
	done sync.WaitGroup
	once sync.Once // finish's
}

// sample takes one sample.
func (s *rssSampler) sample() {
	rss, ok := s.read()
	if !ok {
		return
	}
	open := s.open()
	m := &s.out
	if m.Samples == 0 || open > m.MostOpen {
		m.MostOpen, m.RSSAtMostOpen = open, rss
	} else if open == m.MostOpen {
		m.RSSAtMostOpen = max(m.RSSAtMostOpen, rss)
	}
	if m.Samples == 0 || rss > m.PeakRSS {
		m.PeakRSS, m.OpenAtPeak = rss, open
		if s.held != nil {
			m.LogAtPeak, m.WindowAtPeak = s.held()
		}
	}
	if m.Samples == 0 {
		m.BaseRSS = rss
	}
	m.Samples++
}

// startRSSSampler samples now and then every interval until finish.
func startRSSSampler(open func() int, held func() (log, window int64), interval time.Duration) *rssSampler {
	s := &rssSampler{read: readStatmRSS, open: open, held: held, out: MemorySamples{Interval: interval}, stop: make(chan struct{})}
	s.sample()
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.sample()
			}
		}
	}()
	return s
}

// finish stops the sampler, takes the last sample and returns them all;
// a later call only returns them, so that a deferred finish stops the
// sampler on every path out of a run.
func (s *rssSampler) finish() MemorySamples {
	s.once.Do(func() {
		close(s.stop)
		s.done.Wait()
		s.sample()
	})
	return s.out
}

// readStatmRSS reads the resident set from /proc/self/statm (its second
// field, in pages); false where there is none (not Linux).
func readStatmRSS() (int64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	return statmRSS(b, os.Getpagesize())
}

// statmRSS is statm's resident set (its second field, pages) in bytes.
func statmRSS(statm []byte, pageSize int) (int64, bool) {
	f := bytes.Fields(statm)
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil || pages < 0 {
		return 0, false
	}
	return pages * int64(pageSize), true
}
