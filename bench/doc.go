// Package bench orchestrates a `vllm bench serve`-compatible run: ready
// check, warm-up, profiling, the main run through the engine, and the
// calls to its outputs (Python's in package bench/pyout, stampede's own in
// package bench/report); it also builds the backends' request bodies. The
// command line it runs from is package bench/cli's.
//
// Files by duty:
//   - the run: run.go, endpoint.go, dataset.go, probe.go, interrupt.go,
//     progress.go, server_requests.go (/v1/models, /metrics, profiling),
//     basic_auth.go, servermetrics.go and servermetrics_run.go (the
//     --server-metrics scraper), repeat.go, sweep.go, slo.go, compare.go,
//     cluster*.go, partial*.go, outcome.go;
//   - the request side: backend*.go (the backend table and the bodies),
//     tokenizer_mode.go;
//   - the steps that hand a run to its outputs: run.go (Python's block and
//     result JSON, savePyTorch's PyTorch side file, the sidecar),
//     outputs.go (--plot-timeline, --plot-dataset-stats, --report), and
//     the flags' files steady.go, trim.go, pertoken.go, reasoning.go.
package bench
