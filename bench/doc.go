// Package bench orchestrates a `vllm bench serve`-compatible run: ready
// check, warm-up, profiling, the main run through the engine, and the
// outputs (Python's through package bench/pyout, stampede's own here); it
// also builds the backends' request bodies. The command line it runs from
// is package bench/cli's.
//
// Files by duty:
//   - the run: run.go, endpoint.go, dataset.go, probe.go, interrupt.go,
//     progress.go, server_requests.go (/v1/models, /metrics, profiling),
//     basic_auth.go, servermetrics_run.go, repeat.go, sweep.go, slo.go,
//     compare.go, cluster*.go, partial*.go, outcome.go;
//   - the request side: backend*.go (the backend table and the bodies),
//     tokenizer_mode.go;
//   - Python's outputs are package bench/pyout's; run.go calls them and
//     savePyTorch writes the PyTorch side file;
//   - stampede's outputs: sidecar.go (<result>.stampede.json), the blocks
//     behind our own flags (steady.go, trim.go, pertoken.go, reasoning.go,
//     servermetrics.go), timeline*.go (--plot-timeline), htmlreport*.go
//     (--report), dataset_stats_plot.go (--plot-dataset-stats).
package bench
