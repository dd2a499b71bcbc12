package metrics

import (
	"runtime"
	"testing"
)

// BenchmarkRecorderMemory simulates the recording side of a run of 10,000
// concurrent streams of 1,000 token events each, spread over two shards'
// recorders, every stream receiving its k-th token before any receives its
// (k+1)-th, and measures the heap the run leaves behind:
//
//   - retained-B/token: what the gathered RunData and the recorders hold on
//     the heap once the connections (and their Streams) are gone, per token
//     event: the records themselves are in the log's file;
//   - live-MB: the heap while the 10,000 Streams are still alive, just after
//     the merge.
//
// Run it once per measurement (it records 10M events):
//
//	go test -run '^$' -bench RecorderMemory -benchtime 1x ./metrics
func BenchmarkRecorderMemory(b *testing.B) {
	const streams, tokens = 10_000, 1_000
	for b.Loop() {
		base := heapInUse()
		spool := NewSpool(LogConfig{})
		recs := []*Recorder{NewRecorder(Options{Spool: spool}), NewRecorder(Options{Spool: spool})}
		ss := make([]Stream, streams)
		for i := range ss {
			recs[i%2].Begin(&ss[i], i, 100, int64(i)*1000, int64(i)*1000)
		}
		for k := range tokens {
			for i := range ss {
				// ~20 ms apart with some jitter, as a decode step spreads them.
				ss[i].Token(int64(i)*1000+int64(k)*20_000_000+int64((i*7919+k*104729)%1_000_000), nil)
			}
		}
		for i := range ss {
			ss[i].Usage(100, tokens)
			recs[i%2].EndStream(&ss[i])
		}
		data, err := Gather(SortOptions{Requests: streams}, recs...)
		if err != nil {
			b.Fatal(err)
		}
		live := heapInUse() - base
		runtime.KeepAlive(ss)
		ss = nil
		retained := heapInUse() - base
		runtime.KeepAlive(ss)
		runtime.KeepAlive(data)
		runtime.KeepAlive(recs)
		b.ReportMetric(float64(retained)/(streams*tokens), "retained-B/token")
		b.ReportMetric(float64(live)/(1<<20), "live-MB")
		disk, _ := data.Log.Bytes()
		b.ReportMetric(float64(disk)/(streams*tokens), "log-B/token")
		data.Log.Close()
	}
}

// heapInUse collects garbage and returns the bytes of live heap objects.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
