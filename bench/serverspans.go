package bench

import (
	"context"
	"time"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/bench/spans"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/internal/py"
)

// spanGrace is how long the receiver waits after the run for spans still
// to come: OpenTelemetry's batch span processor, which vLLM's exporter
// uses, exports every 5 s by default, so a request that ended last may be
// exported up to that much later. The wait ends early once every request
// has a span that fits its times.
var spanGrace = 10 * time.Second

// spansListening, when set (tests), is told the receiver's address as
// soon as it listens, before the measured run.
var spansListening func(addr string)

// startSpans starts --otlp-receiver's receiver for n requests, before the
// clock starts; nil without the option. It holds at most twice as many
// spans as requests (and a few more for other spans' sake): a bound on
// what a noisy exporter can make it keep. With --otlp-receiver-token an
// export must carry the token's header.
func (r *run) startSpans(n int) (*spans.Receiver, error) {
	if r.cfg.OTLPReceiver == "" {
		return nil, nil
	}
	o := spans.Options{MaxSpans: 2*n + 1024}
	if t := r.cfg.OTLPReceiverToken; t != "" {
		header, value, err := plan.ReceiverTokenHeader(t)
		if err != nil {
			return nil, &py.Error{Type: "ValueError", Msg: err.Error()}
		}
		o.Auth = &spans.Auth{Header: header, Value: value}
	}
	recv, err := spans.Listen(r.cfg.OTLPReceiver, o)
	if err != nil {
		return nil, &py.Error{Type: "OSError", Msg: err.Error()}
	}
	if spansListening != nil {
		spansListening(recv.Addr())
	}
	return recv, nil
}

// joinSpans waits for the spans exported after the run (ctx: the requests
// made once it is over) and joins them to res's requests.
func (r *run) joinSpans(ctx context.Context, recv *spans.Receiver, res *engine.Result, ds *dataset) *report.ServerSpans {
	if recv == nil {
		return nil
	}
	ids := make([]string, ds.table.Len())
	for i := range ids {
		ids[i] = ds.table.RequestID(i)
	}
	m := spans.NewMatcher(spans.Run{Results: res.Data.Log.Collect(), RequestIDs: ids, Start: res.Start}, recv.Started())
	got := recv.Finish(ctx, spanGrace, m.Enough)
	return spans.Join(m, got, r.cfg.OTLPReceiver, r.cfg.SelectedPercentiles, r.cfg.SaveDetailed)
}
