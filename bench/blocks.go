package bench

import (
	"github.com/stampede-bench/stampede/bench/outcome"
	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/bench/scrape"
	"github.com/stampede-bench/stampede/metrics"
)

// writeBlocks prints what the run measured, Python's block first and then
// stampede's behind their flags, and assembles the sidecar (the extras
// saved beside the result) from the same figures: the one place it is
// built. It sets the outcome's steady state.
func (r *run) writeBlocks(o *outcome.Outcome, m *measurement, ds *dataset) (*report.Sidecar, error) {
	c := r.cfg
	res := m.res
	// Python's warning that no request succeeded blames the arguments:
	// wrong for a run the user stopped, whose stop line says what the
	// results cover.
	if m.interrupted == nil {
		if err := pyout.WriteWarnings(r.stderr, o.Summary); err != nil {
			return nil, err
		}
	}
	if err := pyout.WriteResult(r.stdout, o.Summary, o.Params); err != nil {
		return nil, err
	}
	if err := r.writeTrimmed(o.Summary, o.Data, o.Params); err != nil {
		return nil, err
	}
	breakdown := metrics.ComputeBreakdown(res.Data.Log, c.SelectedPercentiles)
	if c.Breakdown {
		if err := report.WriteBreakdown(r.stdout, breakdown); err != nil {
			return nil, err
		}
	}
	sidecar := report.NewSidecar(res, breakdown, c.SaveDetailed)
	sidecar.Fingerprint, sidecar.Manifest = r.fingerprintFacts, r.manifest
	sidecar.Interrupted = m.interrupted
	r.agent.Account(sidecar)
	var err error
	if sidecar.Reasoning, err = r.reasoning(res.Data.Log); err != nil {
		return sidecar, err
	}
	if sidecar.PerToken, err = r.perToken(res.Data.Log, o.Summary); err != nil {
		return sidecar, err
	}
	o.SteadyState, o.SteadyStateErr = r.steadyState(o)
	sidecar.SteadyState = o.SteadyState
	if err := r.writeSteadyStateBlock(o); err != nil {
		return sidecar, err
	}
	scrape.CompareWithClient(m.serverMetrics, o.Summary)
	sidecar.ServerMetrics = m.serverMetrics
	report.WriteServerVsClient(r.stdout, m.serverMetrics)
	sidecar.PrefixCache = m.prefixCache
	report.WritePrefixCacheWarning(r.stderr, m.prefixCache)
	r.agent.WriteHealth(r.stderr, res, m.serverSpans)
	sidecar.ServerSpans = m.serverSpans
	sidecar.FirstTokens = report.NewSidecarFirstTokens(res.Data.Log, c.SelectedPercentiles, c.SaveDetailed)
	sidecar.NetworkRTT = report.NewSidecarNetworkRTT(res.Health.Shards, c.SelectedPercentiles)
	report.WriteSpansLine(r.stderr, m.serverSpans)
	report.WriteServerMessages(r.stderr, &res.Data.ServerMessages)
	r.serverSaid(sidecar, o, ds)
	if sidecar.FrontEnds, err = r.frontEnds(o); err != nil {
		return sidecar, err
	}
	return sidecar, nil
}

// frontEnds is the run split by front end, request i's the one at i mod
// their count; nil for one.
func (r *run) frontEnds(o *outcome.Outcome) ([]report.SidecarFrontEnd, error) {
	urls := r.cfg.FrontEndURLs
	k := len(urls)
	if k < 2 {
		return nil, nil
	}
	points, err := o.SharePoints(k)
	if err != nil {
		return nil, err
	}
	out := make([]report.SidecarFrontEnd, k)
	for fe, pm := range points {
		out[fe] = report.SidecarFrontEnd{URL: urls[fe], PointMetrics: pm}
	}
	return out, nil
}

// serverSaid groups the failed requests and checks the server's token
// counts, for the sidecar and for stderr after the block.
func (r *run) serverSaid(sidecar *report.Sidecar, o *outcome.Outcome, ds *dataset) {
	results := o.Data.Log
	sidecar.Errors = report.NewSidecarErrors(metrics.GroupErrors(results), r.cfg.APIURL, ds.table.RequestID)
	if !o.Summary.Pooling {
		sidecar.Usage = report.NewSidecarUsage(metrics.CheckUsage(results, o.Options.CountTokens, ds.table.ExpectedOutputLen))
	}
	report.WriteErrors(r.stderr, sidecar.Errors)
	report.WriteUsageNotes(r.stderr, sidecar.Usage)
}
