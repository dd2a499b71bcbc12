package metrics

import (
	"maps"
	"math"
	"slices"
	"testing"
)

const specScrapeBefore = `# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 100.0
vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 50.0
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 450.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 300.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 140.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 100.0
vllm:spec_decode_num_drafts_created 7.0
vllm:spec_decode_num_drafts_total{model_name="a b"} 5.0
vllm:spec_decode_num_drafts_total 1e400
vllm:num_requests_running{model_name="m"} 3.0
`

const specScrapeAfter = `vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 300.0
vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 50.0
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 1050.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 700.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 320.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="2"} 60.0
`

func TestParseSpecDecode(t *testing.T) {
	c, ok := ParseSpecDecode([]byte(specScrapeBefore))
	if !ok {
		t.Fatal("spec-decode counters not found")
	}
	// The "a b" label splits the line early and its value does not parse;
	// 1e400 is not an int; *_created is not a *_total counter.
	want := SpecDecodeCounters{NumDrafts: 150, NumDraftTokens: 450, NumAcceptedTokens: 300,
		AcceptedPerPos: map[int]int64{0: 140, 1: 100}}
	if c.NumDrafts != want.NumDrafts || c.NumDraftTokens != want.NumDraftTokens ||
		c.NumAcceptedTokens != want.NumAcceptedTokens || !maps.Equal(c.AcceptedPerPos, want.AcceptedPerPos) {
		t.Errorf("ParseSpecDecode = %+v, want %+v", c, want)
	}
	if _, ok := ParseSpecDecode([]byte("vllm:num_requests_running 3\n")); ok {
		t.Error("a scrape without spec-decode counters reported some")
	}
}

func TestSpecDecodeDelta(t *testing.T) {
	before, _ := ParseSpecDecode([]byte(specScrapeBefore))
	after, _ := ParseSpecDecode([]byte(specScrapeAfter))
	st := SpecDecodeDelta(before, after)
	if st == nil {
		t.Fatal("no stats")
	}
	if st.NumDrafts != 200 || st.DraftTokens != 600 || st.AcceptedTokens != 400 {
		t.Errorf("deltas = %d %d %d, want 200 600 400", st.NumDrafts, st.DraftTokens, st.AcceptedTokens)
	}
	if st.AcceptanceRate != float64(400)/600*100 || st.AcceptanceLength != 3 {
		t.Errorf("rate %v length %v, want %v 3", st.AcceptanceRate, st.AcceptanceLength, float64(400)/600*100)
	}
	// Position 1 is missing after the run: Python takes its "after" to be
	// its "before", a zero delta. Position 2 is new.
	if want := []float64{0.9, 0, 0.3}; !slices.Equal(st.PerPositionAcceptanceRates, want) {
		t.Errorf("per-position = %v, want %v", st.PerPositionAcceptanceRates, want)
	}
	if SpecDecodeDelta(after, after) != nil {
		t.Error("no draft tokens during the run should give no stats")
	}
}

func TestDiffusion(t *testing.T) {
	before, ok := ParseDiffusion([]byte("vllm:diffusion_num_denoising_steps_total 100\n" +
		"vllm:diffusion_num_canvas_positions_total 3200\nvllm:diffusion_num_committed_tokens_total 400\n"))
	if !ok {
		t.Fatal("diffusion counters not found")
	}
	after, _ := ParseDiffusion([]byte("vllm:diffusion_num_denoising_steps_total{m=\"x\"} 1100\n" +
		"vllm:diffusion_num_canvas_positions_total 35200\nvllm:diffusion_num_committed_tokens_total 2400\n"))
	st := DiffusionDelta(before, after, 4)
	// block = 32000/1000 = 32; canvases = 2000/32 = 62.5; D = 937.5.
	want := DiffusionStats{DenoisingSteps: 937.5, CanvasPositions: 32000, CommittedTokens: 2000,
		CommittedThroughput: 500, StepsPerCanvas: 15, CommittedPerStep: 2000 / 937.5}
	if st == nil || *st != want {
		t.Errorf("DiffusionDelta = %+v, want %+v", st, want)
	}
	if DiffusionDelta(after, after, 4) != nil {
		t.Error("no progress during the run should give no stats")
	}
}

func TestComputeProbes(t *testing.T) {
	if ComputeProbes([]RequestResult{{Error: "x"}}) != nil {
		t.Error("probes without a success should give no stats")
	}
	st := ComputeProbes([]RequestResult{
		{Success: true, LatencyNs: 30 * ms}, {Error: "x"},
		{Success: true, LatencyNs: 10 * ms}, {Success: true, LatencyNs: 20 * ms},
	})
	want := ProbeStats{Completed: 3, Failed: 1, MedianE2ELMs: 20, P99E2ELMs: 29.8, MaxE2ELMs: 30}
	if st == nil || *st != want {
		t.Errorf("ComputeProbes = %+v, want %+v", st, want)
	}
}

func FuzzParseServerMetrics(f *testing.F) {
	f.Add([]byte(specScrapeBefore))
	f.Add([]byte(specScrapeAfter))
	f.Add([]byte("vllm:diffusion_num_denoising_steps_total 1\n"))
	f.Add([]byte(`vllm:spec_decode_num_accepted_tokens_per_pos_total{position="` + "\n"))
	f.Add([]byte("vllm:spec_decode_x_total\t\u00a0nan\r\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		c, _ := ParseSpecDecode(body)
		if st := SpecDecodeDelta(SpecDecodeCounters{}, c); st != nil {
			if st.DraftTokens <= 0 || math.IsNaN(st.AcceptanceRate) {
				t.Fatalf("stats with no draft tokens: %+v", st)
			}
		}
		d, _ := ParseDiffusion(body)
		DiffusionDelta(DiffusionCounters{}, d, 1)
	})
}
