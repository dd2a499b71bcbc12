package spans

import (
	"bytes"
	"net/http"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/stampede-bench/stampede/httpwire"
)

// peakHeap samples the live heap while f runs and returns its peak.
func peakHeap(f func()) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	return peak
}

// BenchmarkReceiverSpanBomb: four exports at once, each 16 MiB of empty
// spans (~8 M: ~16 kB of gzip over HTTP, the raw message over gRPC), the
// issue's bomb, and sixteen at once, four times the exports the receiver
// reads at a time. Reports the live heap's peak while they are refused
// (peak-MB, the senders' side included) beside the bytes allocated per
// round.
func BenchmarkReceiverSpanBomb(b *testing.B) {
	raw := bomb(((16 << 20) - 16) / 2)
	zipped := gzipped(raw)
	for _, c := range []struct {
		protocol string
		senders  int
	}{{"http", 4}, {"grpc", 4}, {"http", 16}, {"grpc", 16}} {
		protocol := c.protocol
		b.Run(protocol+"-"+strconv.Itoa(c.senders), func(b *testing.B) {
			r := newReceiver(b, Options{MaxSpans: 1000})
			client := &http.Client{}
			send := func() {
				if protocol == "grpc" {
					_ = grpcExport(b, r, raw)
					return
				}
				req, _ := http.NewRequest(http.MethodPost, "http://"+r.Addr()+"/v1/traces", bytes.NewReader(zipped))
				req.Header.Set("Content-Type", "application/x-protobuf")
				req.Header.Set("Content-Encoding", "gzip")
				if resp, err := client.Do(req); err == nil {
					resp.Body.Close()
				}
			}
			b.ReportAllocs()
			var peak uint64
			for b.Loop() {
				peak = max(peak, peakHeap(func() {
					var wg sync.WaitGroup
					for range c.senders {
						wg.Go(send)
					}
					wg.Wait()
				}))
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
		})
	}
}

// BenchmarkReceiverExport: one export of 512 spans with vLLM's
// attributes, as its batch span processor sends them, decoded and kept.
func BenchmarkReceiverExport(b *testing.B) {
	var spans []*tracepb.Span
	for i := range 512 {
		spans = append(spans, pbSpan(httpwire.TraceID("r-"+strconv.Itoa(i)), "r-"+strconv.Itoa(i), time.Now().UnixNano()))
	}
	body := export(spans...)
	r := newReceiver(b, Options{MaxSpans: 512})
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if v := r.decode(&job{plain: body}); v.refusal != accepted || v.kept != 512 {
			b.Fatalf("%+v", v)
		}
		r.mu.Lock()
		r.spans = r.spans[:0]
		r.mu.Unlock()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*512), "ns/span")
}
