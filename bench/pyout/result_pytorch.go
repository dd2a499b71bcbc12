package pyout

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/internal/py"
)

// The PyTorch OSS benchmark side file: with $SAVE_TO_PYTORCH_BENCHMARK_FORMAT
// set, Python's save_to_pytorch_benchmark_format writes one record per
// latency statistic next to the result file (vllm/benchmarks/lib/utils.py,
// convert_to_pytorch_benchmark_format and write_to_json):
//
//	[{"benchmark": {"name": "vLLM benchmark", "extra_info": {"args": vars(args)}},
//	  "model": {"name": args.model},
//	  "metric": {"name": "median_ttft_ms", "benchmark_values": [v],
//	             "extra_info": {every other result key}}}, ...]
//
// args is Python's argparse namespace: the plan's Args, which the command
// line fills with every option under its argparse dest and the value the
// run uses (plan.Plan.Args says how it differs from Python's).

// pytorchMetrics are the result keys that become records, in Python's
// order; a key missing from the result (a metric not selected, a
// percentile other than 99) gives no record.
var pytorchMetrics = func() []string {
	p99 := StatPercentile(99)
	var keys []string
	for _, stat := range []struct {
		sec   Section
		stats []Statistic
	}{
		{TTFT, []Statistic{StatMedian, StatMean, StatStd, p99}},
		{TPOT, []Statistic{StatMean, StatMedian, StatStd, p99}},
		{ITL, []Statistic{StatMedian, StatMean, StatStd, p99}},
	} {
		for _, st := range stat.stats {
			keys = append(keys, stat.sec.Figure(st).Key)
		}
	}
	return keys
}()

// pytorchIgnored are the large per-request lists left out of extra_info.
var pytorchIgnored = []string{"ttfts", "itls", "generated_texts", "errors"}

// PyTorchPath is the side file of a result file: Python's
// os.path.splitext(name)[0] + ".pytorch.json".
func PyTorchPath(resultPath string) string {
	root, _ := py.SplitExt(resultPath)
	return root + ".pytorch.json"
}

// WritePyTorchBenchmark writes the PyTorch benchmark records of a saved
// result to path (truncating it). When the result holds none of the
// latency statistics, nothing is written and written is false, as in
// Python.
func WritePyTorchBenchmark(path string, c *plan.Plan, res *Result) (written bool, err error) {
	records := pytorchRecords(c, res)
	if len(records) == 0 {
		return false, nil
	}
	var b bytes.Buffer
	if err := appendPyTorchJSON(&b, records); err != nil {
		return false, err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o666); err != nil {
		return false, fmt.Errorf("PyTorch benchmark file: %w", err)
	}
	return true, nil
}

// pytorchRecords builds the records. As in Python, every record shares one
// args dict and one extra_info dict; a tensor_parallel_size given through
// --metadata is copied into args.
func pytorchRecords(c *plan.Plan, res *Result) []*py.Object {
	args := c.Args.Copy()
	extra := py.NewObject()
	for k, v := range res.dict.All() {
		if !slices.Contains(pytorchMetrics, k) && !slices.Contains(pytorchIgnored, k) {
			extra.Set(k, v)
		}
	}
	var records []*py.Object
	for _, name := range pytorchMetrics {
		value, ok := res.dict.Get(name)
		if !ok {
			continue
		}
		if tp, ok := extra.Get("tensor_parallel_size"); ok && !py.Truthy(args.Value("tensor_parallel_size")) {
			args.Set("tensor_parallel_size", tp)
		}
		benchmark := py.NewObject()
		benchmark.Set("name", "vLLM benchmark")
		benchmarkExtra := py.NewObject()
		benchmarkExtra.Set("args", &args)
		benchmark.Set("extra_info", benchmarkExtra)
		model := py.NewObject()
		model.Set("name", args.Value("model"))
		metric := py.NewObject()
		metric.Set("name", name)
		metric.Set("benchmark_values", []any{value})
		metric.Set("extra_info", extra)

		record := py.NewObject()
		record.Set("benchmark", benchmark)
		record.Set("model", model)
		record.Set("metric", metric)
		records = append(records, record)
	}
	return records
}

// appendPyTorchJSON is write_to_json's encoding: json.dump's defaults with
// its InfEncoder, which writes every infinite float (either sign) as the
// string "inf". Everything else is encoded as in the result JSON.
func appendPyTorchJSON(b *bytes.Buffer, v any) error {
	return py.AppendJSON(b, v, &infEncoder)
}

// infEncoder is json.dumps's defaults with InfEncoder's float.
var infEncoder = func() py.JSONOptions {
	o := py.DefaultJSON
	o.Float = appendInfEncoderFloat
	return o
}()

// appendInfEncoderFloat is InfEncoder's float: "inf" (a JSON string) for
// either infinity, json.dumps's float otherwise.
func appendInfEncoderFloat(dst []byte, f float64) []byte {
	if math.IsInf(f, 0) {
		return append(dst, `"inf"`...)
	}
	return py.AppendJSONFloat(dst, f)
}
