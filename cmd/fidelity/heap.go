package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// heapWatch samples the runtime's memory classes while the client runs
// and keeps the heap profile taken when the live heap was at its largest,
// so a peak RSS can be traced to the allocations behind it.
type heapWatch struct {
	stop, done chan struct{}
	samples    []metrics.Sample
	peak       [len(heapClasses)]uint64 // each class's largest value
	liveAtPeak uint64
	// atRSSPeak: the classes when the resident set (anonymous and file
	// pages, from /proc/self/status) was at its largest.
	rssPeak, anonAtPeak, fileAtPeak uint64
	atRSSPeak                       [len(heapClasses)]uint64
	profile                         bytes.Buffer
}

// heapClasses are the runtime/metrics the watch reports, with short names.
var heapClasses = [...]struct{ name, metric string }{
	{"live heap", "/gc/heap/live:bytes"},
	{"heap objects", "/memory/classes/heap/objects:bytes"},
	{"heap free", "/memory/classes/heap/free:bytes"},
	{"heap unused", "/memory/classes/heap/unused:bytes"},
	{"stacks", "/memory/classes/heap/stacks:bytes"},
	{"OS stacks", "/memory/classes/os-stacks:bytes"},
	{"runtime", "/memory/classes/metadata/other:bytes"},
	{"total mapped", "/memory/classes/total:bytes"},
	{"released", "/memory/classes/heap/released:bytes"},
}

func startHeapWatch() *heapWatch {
	// A sample every 4 KB, not 512 KB: per-connection state of a few
	// hundred bytes shows up by its allocation site.
	runtime.MemProfileRate = 4096
	w := &heapWatch{stop: make(chan struct{}), done: make(chan struct{})}
	for _, c := range heapClasses {
		w.samples = append(w.samples, metrics.Sample{Name: c.metric})
	}
	go w.run()
	return w
}

func (w *heapWatch) run() {
	defer close(w.done)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		metrics.Read(w.samples)
		for i, s := range w.samples {
			w.peak[i] = max(w.peak[i], s.Value.Uint64())
		}
		if rss, anon, file := residentSet(); rss > w.rssPeak {
			w.rssPeak, w.anonAtPeak, w.fileAtPeak = rss, anon, file
			for i, s := range w.samples {
				w.atRSSPeak[i] = s.Value.Uint64()
			}
		}
		if live := w.samples[0].Value.Uint64(); live > w.liveAtPeak {
			w.liveAtPeak = live
			w.profile.Reset()
			pprof.Lookup("heap").WriteTo(&w.profile, 0)
		}
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
	}
}

// finish stops the watch, writes the profile to path and prints the
// peaks to stderr.
func (w *heapWatch) finish(path string) error {
	close(w.stop)
	<-w.done
	fmt.Fprint(os.Stderr, "memory peaks MB:")
	for i, c := range heapClasses {
		fmt.Fprintf(os.Stderr, " %s %.1f;", c.name, float64(w.peak[i])/(1<<20))
	}
	gc := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(gc)
	fmt.Fprintf(os.Stderr, " GC CPU %.2fs\n", gc[0].Value.Float64())
	fmt.Fprintf(os.Stderr, "at the RSS peak %.1f MB (anonymous %.1f, file %.1f):", float64(w.rssPeak)/(1<<20), float64(w.anonAtPeak)/(1<<20), float64(w.fileAtPeak)/(1<<20))
	for i, c := range heapClasses {
		fmt.Fprintf(os.Stderr, " %s %.1f;", c.name, float64(w.atRSSPeak[i])/(1<<20))
	}
	fmt.Fprintln(os.Stderr)
	return os.WriteFile(path, w.profile.Bytes(), 0o644)
}

// residentSet reads VmRSS, RssAnon and RssFile (bytes) from
// /proc/self/status.
func residentSet() (rss, anon, file uint64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "RssAnon:":
			anon = kb << 10
		case "RssFile:":
			file = kb << 10
		}
	}
	return rss, anon, file
}
