package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/cluster"
	"github.com/stampede-bench/stampede/bench/internal/benchtest"
	"github.com/stampede-bench/stampede/bench/outcome"
	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
	"github.com/stampede-bench/stampede/metrics"
)

// runOutcome runs a benchmark against the mock and returns what it
// measured and printed.
func runOutcome(t *testing.T, cfg mock.Config, args ...string) (*outcome.Outcome, string) {
	t.Helper()
	srv := startTinyMock(t, cfg)
	c, err := benchtest.ParseArgs(append([]string{"--base-url", "http://" + srv.Addr(), "--tokenizer", tinyTokenizer,
		"--disable-tqdm", "--model", "mock-llm", "--result-dir", t.TempDir()}, args...), benchtest.NoEnv)
	if err != nil {
		t.Fatalf("parseArgs: %v", err)
	}
	var out, errOut bytes.Buffer
	o, err := RunOnce(context.Background(), c, &out, &errOut)
	if err != nil || o == nil {
		t.Fatalf("RunOnce: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	return o, out.String()
}

// singleHostOutputs is what one host prints and saves for o: Python's
// block (with the --breakdown block when asked) and the result JSON dated
// now, as the run's own code writes them.
func singleHostOutputs(t *testing.T, o *outcome.Outcome, breakdown bool, now time.Time) (block string, result []byte) {
	t.Helper()
	var b bytes.Buffer
	if err := pyout.WriteResult(&b, o.Summary, o.Params); err != nil {
		t.Fatal(err)
	}
	if breakdown {
		if err := report.WriteBreakdown(&b, metrics.ComputeBreakdown(o.Data.Log, o.Options.Percentiles)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := pyout.BuildResult(o.Summary, o.Data, o.Params, o.Options.CountTokens, now)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "single.json")
	if err := pyout.SaveResult(path, res, false); err != nil {
		t.Fatal(err)
	}
	result, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b.String(), result
}

// resultDate is a result JSON's "date" (pyout.DateLayout), which only
// says when the result was saved.
var resultDate = regexp.MustCompile(`"date": ?"[0-9]{8}-[0-9]{6}"`)

// undated is a result JSON with its date blanked.
func undated(result []byte) []byte { return resultDate.ReplaceAll(result, []byte(`"date": ""`)) }

// TestMergeEqualsSingleHost splits one run into N partials as N agents
// would have sent it (request i to agent i mod N), writes and reads each
// in the partial format, merges them, and holds the merged block and
// result JSON to the single host's, byte for byte.
func TestMergeEqualsSingleHost(t *testing.T) {
	now := time.Date(2026, 12, 1, 13, 0, 0, 0, time.Local)
	common := []string{"--dataset-name", "random", "--num-prompts", "37", "--random-input-len", "16",
		"--random-output-len", "9", "--request-rate", "400", "--max-concurrency", "6", "--seed", "7",
		"--percentile-metrics", "ttft,tpot,itl,e2el,client_queue_time,e2el_including_client_queue",
		"--metric-percentiles", "1,25,50,90,99.9", "--goodput", "ttft:40", "e2el:80", "--save-result"}
	for _, tc := range []struct {
		name      string
		cfg       mock.Config
		args      []string
		breakdown bool
	}{
		{"detailed with failures", mock.Config{TTFT: 2 * time.Millisecond, ITL: time.Millisecond,
			Faults: []mock.Fault{{Kind: mock.FaultHTTP500, Every: 7}, {Kind: mock.FaultResetMidStream, Every: 11, At: 3}}},
			[]string{"--save-detailed", "--breakdown"}, true},
		{"gaps in arenas, counted without usage", mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond},
			[]string{"--extra-body", `{"stream_options":{"include_usage":false}}`}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, printed := runOutcome(t, tc.cfg, append(append([]string{}, common...), tc.args...)...)
			wantBlock, wantResult := singleHostOutputs(t, o, tc.breakdown, now)
			if !strings.Contains(printed, wantBlock) {
				t.Fatalf("the run printed a different block:\n%s\nwant within it:\n%s", printed, wantBlock)
			}
			if o.Summary.Completed == 0 {
				t.Fatal("no request succeeded: nothing to compare")
			}
			for _, n := range []int{1, 3, 4} {
				parts := cluster.SplitOutcome(o, tc.breakdown, report.SidecarHealth{}, n, nil)
				var read []*cluster.PartialReader
				// Handed over in reverse order: the merge sorts by index.
				for k := n - 1; k >= 0; k-- {
					var buf bytes.Buffer
					if err := cluster.WritePartial(&buf, parts[k]); err != nil {
						t.Fatal(err)
					}
					p, err := cluster.OpenPartial(&buf)
					if err != nil {
						t.Fatalf("agent %d of %d: %v", k, n, err)
					}
					read = append(read, p)
				}
				m, err := cluster.MergePartials(read)
				if err != nil {
					t.Fatalf("merge of %d: %v", n, err)
				}
				dir := t.TempDir()
				m.Params.ResultDir, m.Params.ResultFilename = dir, "merged.json"
				var stdout, stderr bytes.Buffer
				if _, err := WriteMerged(m, &stdout, &stderr); err != nil {
					t.Fatalf("merge of %d: %v", n, err)
				}
				if stdout.String() != wantBlock {
					t.Errorf("merge of %d prints\n%s\nwant\n%s", n, stdout.String(), wantBlock)
				}
				got, err := os.ReadFile(filepath.Join(dir, "merged.json"))
				if err != nil {
					t.Fatal(err)
				}
				if got, want := undated(got), undated(wantResult); !bytes.Equal(got, want) {
					t.Errorf("merge of %d saves\n%s\nwant\n%s", n, got, wantResult)
				}
				if _, err := os.Stat(filepath.Join(dir, "merged.stampede.json")); err != nil {
					t.Errorf("merge of %d wrote no sidecar: %v", n, err)
				}
			}
		})
	}
}

// agentZeroOnly are the sidecar's sections that only agent 0 can fill:
// the manifest of the command line it was given, which `stampede merge`
// never sees (it is given the partials alone, and writes no manifest).
// What agent 0 read from the server (its /metrics, the prefix cache, its
// spans) travels in its partial.
var agentZeroOnly = []string{"manifest"}

// TestMergeCommandEqualsAgentZero holds what `stampede merge` prints and
// saves for the partials of a cluster run to what agent 0 printed and
// saved for the same run: the block and the blocks behind their flags
// byte for byte, the result JSON byte for byte but its date, the sidecar
// but agentZeroOnly, and every line agent 0 printed on stderr about the
// merged run (the errors, the usage notes, the clocks).
func TestMergeCommandEqualsAgentZero(t *testing.T) {
	srv := startTinyMock(t, mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond, PrefixCache: mock.PrefixCacheGlobal,
		Faults: []mock.Fault{{Kind: mock.FaultHTTP500, Every: 6}}})
	dir := t.TempDir()
	const n, size = 36, 3
	stdout, stderr := runAgents(t, size, []string{"--base-url", "http://" + srv.Addr(), "--tokenizer", tinyTokenizer,
		"--disable-tqdm", "--model", "mock-llm", "--dataset-name", "random", "--num-prompts", fmt.Sprint(n),
		"--random-input-len", "16", "--random-output-len", "6", "--request-rate", "400", "--max-concurrency", "6", "--seed", "4",
		"--breakdown", "--reasoning-metrics", "--steady-state", "--steady-state-min-window", "0.01",
		"--warmup-time", "0.002", "--cooldown-time", "0.002", "--server-metrics",
		"--save-result", "--save-detailed", "--result-dir", dir, "--result-filename", "run.json",
		"--save-partial", filepath.Join(dir, "part.bin")})

	m := mergedPartials(t, dir)
	offline := t.TempDir()
	m.Params.ResultDir = offline
	var mergeOut, mergeErr bytes.Buffer
	if _, err := WriteMerged(m, &mergeOut, &mergeErr); err != nil {
		t.Fatal(err)
	}
	// Python's warnings on the failed requests precede the block.
	if got := mergeOut.String(); !strings.HasSuffix(stdout, got) || !strings.Contains(got, "Serving Benchmark Result") || !strings.Contains(got, report.TrimmedTitle) {
		t.Errorf("stampede merge prints\n%s\nnot the end of what agent 0 printed\n%s", got, stdout)
	}
	for _, line := range strings.Split(strings.TrimSpace(mergeErr.String()), "\n") {
		if !strings.Contains(stderr, line+"\n") {
			t.Errorf("stampede merge says %q on stderr, agent 0 did not:\n%s", line, stderr)
		}
	}
	for _, want := range []string{"failed", "clocks against agent 0"} {
		if !strings.Contains(mergeErr.String(), want) {
			t.Errorf("stampede merge's stderr lacks %q:\n%s", want, mergeErr.String())
		}
	}

	agentResult, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	mergeResult, err := os.ReadFile(filepath.Join(offline, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := undated(agentResult), undated(mergeResult); !bytes.Equal(a, b) {
		t.Errorf("stampede merge saves\n%s\nagent 0 saved\n%s", b, a)
	}
	sidecars := make([][]byte, 2)
	for i, d := range []string{dir, offline} {
		sc := readJSON(t, filepath.Join(d, "run.stampede.json"))
		for _, k := range agentZeroOnly {
			delete(sc, k)
		}
		for _, k := range []string{"errors", "usage", "breakdown", "cluster", "fingerprint", "server_metrics", "prefix_cache"} {
			if sc[k] == nil {
				t.Errorf("%s: the sidecar has no %s", d, k)
			}
		}
		sidecars[i], _ = json.MarshalIndent(sc, "", " ")
	}
	if !bytes.Equal(sidecars[0], sidecars[1]) {
		t.Errorf("stampede merge's sidecar\n%s\nagent 0's\n%s", sidecars[1], sidecars[0])
	}
}
