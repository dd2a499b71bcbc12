// Command clusterbench judges a run against the mock, token by token: it
// merges the truth logs of the mock processes that served it (several
// addresses, or one port shared with --reuse-port), matches every request
// of the merged result (--save-detailed, request ids "<prefix><index>") to
// the server's record of it by its index, puts every token event the
// client stamped on the host's CLOCK_MONOTONIC and subtracts the moment
// the mock handed that token to write(2).
//
//	clusterbench -result run.json -truth mock1.log,mock2.log -agent-log agent0.err
//
// It reports the token error (client stamp − truth stamp, every token
// including the first) as p50/p99/p99.9/max and the count beyond 1 ms, the
// ITL error (client gap − server gap), the TTFT error (the first token's
// error: a TTFT starts at the client's own stamp, which no server sees),
// the time from that stamp to the request's arrival at the mock, each
// mock's decode-step spread (how long a step took to write all its
// tokens, and how late its last write was), and each agent's clock
// offset bound. -row prints the same figures as one row of
// docs/scale.md's table, its RSS columns from the agents' own memory in
// the sidecars' health (-held-result, -base-result).
//
// It must run on the host that ran the agents: it reads that host's
// CLOCK_REALTIME − CLOCK_MONOTONIC to turn the agents' wall-clock start
// into monotonic time (the difference only moves when the wall clock is
// stepped). scripts/bench-cluster.sh and scripts/bench-scale.sh run the
// whole benchmark.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
)

type options struct {
	result, truth, agentLog string
	row                     bool
	heldResult, baseResult  string
	tokPerSec               float64
	mockCPUSeconds          float64
}

func main() {
	var o options
	flag.StringVar(&o.result, "result", "", "merged result JSON, saved with --save-detailed (its sidecar beside it)")
	flag.StringVar(&o.truth, "truth", "", "comma-separated truth logs of the mock processes")
	flag.StringVar(&o.agentLog, "agent-log", "", "an agent's stderr, which holds the line with the run's announced start")
	flag.BoolVar(&o.row, "row", false, "print the figures as one markdown row of docs/scale.md's table")
	flag.StringVar(&o.heldResult, "held-result", "", "with -row: the result JSON of the same agents running the same requests with few streams open at a time (its sidecar beside it), for the RSS split")
	flag.StringVar(&o.baseResult, "base-result", "", "with -row: the result JSON of agents running one request each (its sidecar beside it): their mean RSS, at their most open sample and at their peak, is an agent's fixed part")
	flag.Float64Var(&o.mockCPUSeconds, "mock-cpu-s", 0, "the mocks' CPU time, seconds, for their CPU per token write")
	flag.Float64Var(&o.tokPerSec, "tok-per-s", 0, "with -row: tokens per second per stream, printed in the row")
	header := flag.Bool("header", false, "print the head of docs/scale.md's table (for -row) and exit")
	flag.Parse()
	if *header {
		fmt.Println(tableHeader)
		return
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "clusterbench:", err)
		os.Exit(1)
	}
}

// detailed is what clusterbench reads of the result JSON. start_times,
// ttfts and itls are seconds on the merged run's clock: time 0 is the
// announced start on agent 0's wall clock, each agent's times moved by
// its measured offset.
type detailed struct {
	Completed  int         `json:"completed"`
	Failed     int         `json:"failed"`
	StartTimes []float64   `json:"start_times"`
	TTFTs      []float64   `json:"ttfts"`
	ITLs       [][]float64 `json:"itls"`
}

type sidecar struct {
	Cluster report.SidecarCluster `json:"cluster"`
	Health  report.SidecarHealth  `json:"health"`
}

func run(o options) error {
	var res detailed
	if err := readJSON(o.result, &res); err != nil {
		return err
	}
	if len(res.StartTimes) != len(res.ITLs) || len(res.TTFTs) != len(res.ITLs) {
		return fmt.Errorf("%s: start_times, ttfts and itls differ in length: was it saved with --save-detailed?", o.result)
	}
	var sc sidecar
	if err := readJSON(report.SidecarPath(o.result), &sc); err != nil {
		return err
	}
	if sc.Cluster.Size == 0 || len(sc.Cluster.Agents) != sc.Cluster.Size {
		return fmt.Errorf("%s: no cluster section with every agent: run the agents with --cluster-size 2 or more", report.SidecarPath(o.result))
	}
	startUnixNs, err := announcedStart(o.agentLog)
	if err != nil {
		return err
	}
	truth, err := mergeTruth(strings.Split(o.truth, ","))
	if err != nil {
		return err
	}
	wallMinusMono := mock.RealtimeOffset(20)
	// Agent a's run time t is its own wall-clock time StartUnix + offset_a + t
	// (offset: agent − agent 0), so its CLOCK_MONOTONIC reading is that
	// minus the host's realtime − monotonic.
	zeroMonoNs := make([]int64, sc.Cluster.Size)
	for _, a := range sc.Cluster.Agents {
		zeroMonoNs[a.Index] = startUnixNs + a.Clock.OffsetNs - wallMinusMono
	}
	m := match(&res, &truth, zeroMonoNs)
	f := figures{
		matched: m, steps: truth.steps, agents: sc.Cluster.Agents,
		mockCPUSeconds: o.mockCPUSeconds, resultRequests: len(res.ITLs), completed: res.Completed, failed: res.Failed, truthRequests: len(truth.byIndex),
	}
	if o.row {
		mem, err := readRSSSplit(o, sc)
		if err != nil {
			return err
		}
		fmt.Println(f.row(len(res.ITLs), len(truth.steps), o.tokPerSec, mem))
		return nil
	}
	f.print(os.Stdout)
	return nil
}

// announcedStart reads the run's start on agent 0's wall clock from an
// agent's stderr line "stampede: agent I of N: clock offset … ; the run
// starts at RFC3339Nano".
func announcedStart(path string) (int64, error) {
	if path == "" {
		return 0, fmt.Errorf("-agent-log: give an agent's stderr, which says when the run started")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("-agent-log: %w", err)
	}
	const marker = "; the run starts at "
	for line := range strings.Lines(string(b)) {
		// --cluster-local prefixes every agent's line with "agent I: ".
		if i := strings.Index(line, marker); i >= 0 && strings.Contains(line[:i], "stampede: agent ") {
			t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(line[i+len(marker):]))
			if err != nil {
				return 0, fmt.Errorf("-agent-log %s: the run's start: %w", path, err)
			}
			return t.UnixNano(), nil
		}
	}
	return 0, fmt.Errorf("-agent-log %s: no line %q: is it the stderr of a cluster agent?", path, "stampede: agent … the run starts at …")
}

// readRSSSplit gathers the agents' own memory of the row's run (sc), of
// the held run and of the base run, each from its sidecar's health.
func readRSSSplit(o options, sc sidecar) (rssSplit, error) {
	mem := rssSplit{run: sc.Health.Agents}
	if len(mem.run) != sc.Cluster.Size {
		return mem, fmt.Errorf("%s: health.agents has the memory of %d of the %d agents: were they run by a stampede that reads its own?",
			report.SidecarPath(o.result), len(mem.run), sc.Cluster.Size)
	}
	if o.heldResult != "" {
		var held sidecar
		if err := readJSON(report.SidecarPath(o.heldResult), &held); err != nil {
			return mem, fmt.Errorf("-held-result: %w", err)
		}
		if mem.held = held.Health.Agents; len(mem.held) != len(mem.run) {
			return mem, fmt.Errorf("-held-result %s: the memory of %d agents, the row's %d: want the same agents", o.heldResult, len(mem.held), len(mem.run))
		}
	}
	if o.baseResult != "" {
		var base sidecar
		if err := readJSON(report.SidecarPath(o.baseResult), &base); err != nil {
			return mem, fmt.Errorf("-base-result: %w", err)
		}
		if len(base.Health.Agents) == 0 {
			return mem, fmt.Errorf("-base-result %s: no agent's memory in its health", o.baseResult)
		}
		n := int64(len(base.Health.Agents))
		mem.baseOpenKnown = true
		for _, a := range base.Health.Agents {
			mem.basePeakBytes += a.PeakRSSBytes
			if a.Sampled == nil {
				mem.baseOpenKnown = false
				continue
			}
			mem.baseOpenBytes += a.Sampled.RSSAtMostOpenBytes
		}
		mem.basePeakBytes /= n
		mem.baseOpenBytes /= n
	}
	return mem, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
