package bench

import (
	"context"
	"time"

	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/bench/spans"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/internal/py"
)

// spanGrace is how long the receiver waits after the run for spans still
// to come: OpenTelemetry's batch span processor, which vLLM's exporter
// uses, exports every 5 s by default, so a request that ended last may be
// exported up to that much later. The wait ends early once every request
// has its span.
var spanGrace = 10 * time.Second

// startSpans starts --otlp-receiver's receiver for n requests, before the
// clock starts; nil without the option. It holds at most twice as many
// spans as requests (and a few more for other spans' sake): a bound on
// what a noisy exporter can make it keep.
func (r *run) startSpans(n int) (*spans.Receiver, error) {
	if r.cfg.OTLPReceiver == "" {
		return nil, nil
	}
	recv, err := spans.Listen(r.cfg.OTLPReceiver, 2*n+1024)
	if err != nil {
		return nil, &py.Error{Type: "OSError", Msg: err.Error()}
	}
	return recv, nil
}

// joinSpans waits for the spans exported after the run (ctx: the requests
// made once it is over) and joins them to res's requests.
func (r *run) joinSpans(ctx context.Context, recv *spans.Receiver, res *engine.Result, ds *dataset) *report.ServerSpans {
	if recv == nil {
		return nil
	}
	ok := 0
	for _, rr := range res.Data.Log.All() {
		if rr.Success {
			ok++
		}
	}
	got := recv.Finish(ctx, ok, spanGrace)
	ids := make([]string, ds.table.Len())
	for i := range ids {
		ids[i] = ds.table.RequestID(i)
	}
	return spans.Join(res.Data.Log.Collect(), ids, got, r.cfg.OTLPReceiver, r.cfg.SelectedPercentiles, r.cfg.SaveDetailed)
}
