package bench

import (
	"fmt"
	"time"

	"github.com/stampede-bench/stampede/bench/backend"
	"github.com/stampede-bench/stampede/bench/endpoint"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/internal/py"
)

// Side probes (--probe-request-rate r, spec §c "Probes") are an engine
// feature (engine.Probe: one loop on its own keep-alive connection, paced
// as Python's probe_loop); bench builds the probe request.

// newProbe encodes the probe request: the test input (request #0 without
// an id) with prompt "Hi", prompt_len 1, output_len 1, and no media or chat
// messages, exactly as Python's probe_loop replaces them. It returns nil
// when --probe-request-rate is not positive.
func (r *run) newProbe(model endpoint.Model, ds *dataset) (*engine.Probe, error) {
	c := r.cfg
	rate := c.ProbeRequestRate
	if !(rate > 0) || !r.agent.SendsProbes() {
		return nil, nil
	}
	if backend.Of(c.Backend).QueryWithDocuments() {
		return nil, py.UsageErrorf("--probe-request-rate is not supported with --backend %s: "+
			"the probe prompt \"Hi\" is not a query with documents", c.Backend)
	}
	probe := ds.first
	probe.RequestID = ""
	probe.Prompt, probe.PromptIDs, probe.PromptList = "Hi", nil, nil
	probe.PromptLen, probe.ExpectedOutputLen = 1, 1
	probe.MultiModal, probe.ChatMessages, probe.Audio = nil, nil, nil
	params := r.bodyParams(model)
	// The probe asks for no running usage: its ITL is not counted per token.
	params.ContinuousUsage = false
	q, err := r.server.EngineRequest(0, &probe, params)
	if err != nil {
		return nil, fmt.Errorf("probe request: %w", err)
	}
	return &engine.Probe{
		Request: q,
		// An infinite rate gives Python's sleep(0): probes back to back.
		Interval: time.Duration(float64(time.Second) / rate),
	}, nil
}
