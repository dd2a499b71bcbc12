package pyout

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/pyout/pyouttest"
	"github.com/stampede-bench/stampede/internal/py"
	"github.com/stampede-bench/stampede/metrics"
)

// pytorchGolden is the full report golden case with a tensor_parallel_size
// in --metadata, and the flags of a run that would produce it.
func pytorchGolden(t *testing.T) (*plan.Plan, *Result) {
	t.Helper()
	c := goldenCases()[0]
	c.params.Metadata = append(c.params.Metadata, "tensor_parallel_size=8")
	d := c.run()
	s, err := metrics.Compute(d, c.opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := BuildResult(s, d, &c.params, c.opts.CountTokens, goldenNow)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := parseArgs([]string{
		"--model", "meta-llama/Llama-3.1-8B-Instruct", "--label", "nightly", "--max-concurrency", "4",
		"--request-rate", "10", "--metric-percentiles", "50,90,99,99.9,12.5",
		"--percentile-metrics", "ttft,tpot,itl,e2el,client_queue_time,e2el_including_client_queue,bogus",
		"--goodput", "ttft:150", "tpot:25", "--save-result", "--save-detailed",
		"--metadata", "version=0.3.3", "tensor_parallel_size=8",
		"--extra-body", `{"top_k": 5, "x": 1e3, "name": "é"}`, "--cpus", "0-1",
		"--request-id-prefix", "bench-golden-",
	}, func(string) string { return "1" })
	if err != nil {
		t.Fatal(err)
	}
	return cfg, res
}

func TestGoldenPyTorch(t *testing.T) {
	f, res := pytorchGolden(t)
	path := filepath.Join(t.TempDir(), "r.pytorch.json")
	written, err := WritePyTorchBenchmark(path, f, res)
	if err != nil || !written {
		t.Fatalf("written %v, error %v", written, err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	compareGolden(t, "pytorch", "generation_full.pytorch.json", got)

	var records []struct {
		Benchmark struct {
			Name      string `json:"name"`
			ExtraInfo struct {
				Args map[string]any `json:"args"`
			} `json:"extra_info"`
		} `json:"benchmark"`
		Model struct {
			Name *string `json:"name"`
		} `json:"model"`
		Metric struct {
			Name      string         `json:"name"`
			Values    []float64      `json:"benchmark_values"`
			ExtraInfo map[string]any `json:"extra_info"`
		} `json:"metric"`
	}
	if err := json.Unmarshal(got, &records); err != nil {
		t.Fatal(err)
	}
	// Every latency statistic except the p99s is selected; 99 is among
	// the percentiles, so all twelve records are present, in Python's order.
	var names []string
	for _, r := range records {
		names = append(names, r.Metric.Name)
		if r.Benchmark.Name != "vLLM benchmark" || r.Model.Name == nil || *r.Model.Name != "meta-llama/Llama-3.1-8B-Instruct" {
			t.Errorf("record %s: benchmark %q model %v", r.Metric.Name, r.Benchmark.Name, r.Model.Name)
		}
		if len(r.Metric.Values) != 1 || r.Metric.Values[0] != res.dict.Value(r.Metric.Name) {
			t.Errorf("record %s: values %v, want [%v]", r.Metric.Name, r.Metric.Values, res.dict.Value(r.Metric.Name))
		}
		args := r.Benchmark.ExtraInfo.Args
		if args["tensor_parallel_size"] != "8" || args["max_concurrency"] != float64(4) ||
			args["dataset_path"] != nil || args["backend"] != "openai" || args["self_timed"] != false {
			t.Errorf("record %s: args %v", r.Metric.Name, args)
		}
		for _, k := range []string{"help", "no_self_timed"} {
			if _, ok := args[k]; ok {
				t.Errorf("record %s: args hold %s", r.Metric.Name, k)
			}
		}
		for _, k := range []string{"ttfts", "itls", "generated_texts", "errors", "mean_ttft_ms", "p99_itl_ms"} {
			if _, ok := r.Metric.ExtraInfo[k]; ok {
				t.Errorf("record %s: extra_info holds %s", r.Metric.Name, k)
			}
		}
		for _, k := range []string{"date", "latencies", "input_lens", "p50_ttft_ms", "mean_e2el_ms", "tensor_parallel_size"} {
			if _, ok := r.Metric.ExtraInfo[k]; !ok {
				t.Errorf("record %s: extra_info lacks %s", r.Metric.Name, k)
			}
		}
	}
	if want := pytorchMetrics; !slices.Equal(names, want) {
		t.Errorf("records %q, want %q", names, want)
	}
}

// TestPyTorchMatchesPythonJSON reloads the golden file with Python's json
// module and dumps it again with json.dump's defaults: the bytes must not
// change, so separators, escapes and float spellings are Python's.
func TestPyTorchMatchesPythonJSON(t *testing.T) {
	path := filepath.Join("testdata", "pytorch", "generation_full.pytorch.json")
	out, err := exec.Command(pyouttest.Python3(t), "-c",
		"import json, sys; sys.stdout.write(json.dumps(json.load(open(sys.argv[1]))))", path).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, want) {
		t.Errorf("Python re-encodes the records differently:\n got: %.400q\nwant: %.400q", out, want)
	}
}

func TestPyTorchNoRecords(t *testing.T) {
	// A pooling result selects e2el only: no record, no file.
	res := &Result{dict: py.NewObject()}
	res.dict.Set("mean_e2el_ms", 1.5)
	path := filepath.Join(t.TempDir(), "p.pytorch.json")
	written, err := WritePyTorchBenchmark(path, &plan.Plan{}, res)
	if err != nil || written {
		t.Fatalf("written %v, error %v", written, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a file was written: %v", err)
	}
}

func TestPyTorchJSONValues(t *testing.T) {
	d := py.NewObject()
	d.Set("rate", math.Inf(1))
	d.Set("rates", []float64{1, math.Inf(1), -math.Inf(1)})
	d.Set("raw", py.RawJSON(`{"a": 1.0}`))
	d.Set("nested", []any{nil, "x", int64(3), []string{"a"}})
	var b bytes.Buffer
	if err := appendPyTorchJSON(&b, d); err != nil {
		t.Fatal(err)
	}
	want := `{"rate": "inf", "rates": [1.0, "inf", "inf"], "raw": {"a": 1.0}, "nested": [null, "x", 3, ["a"]]}`
	if b.String() != want {
		t.Errorf("got  %s\nwant %s", b.String(), want)
	}
}
