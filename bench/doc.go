// Package bench is one `vllm bench serve`-compatible run, Run, told as its
// phases in data-flow order (DESIGN.md "One run, as data"): model
// discovery, tokenizer, dataset, the requests' bytes, the ready check,
// warm-ups, the measured run through the engine (profiler, banner,
// /metrics before and after), its figures, the blocks and the files.
// Every phase returns what the next needs.
//
// Files by phase:
//   - run.go: Run and the phases before the measured run;
//   - benchmark.go: the measured run and its figures; probe.go, the side
//     probes; cluster.go, the measured run as one agent of a cluster;
//   - blocks.go: the blocks after Python's and the sidecar, with the
//     flags' own files trim.go, reasoning.go, pertoken.go, steady.go;
//   - outputs.go: the result JSON, the sidecar and stampede's pages;
//   - dataset.go: `stampede dataset`'s sampling and its JSONL.
//
// The pieces it calls live beside it: the server side in bench/endpoint,
// the request bodies in bench/backend, the /metrics scraper in
// bench/scrape, the cluster protocol in bench/cluster, the progress bar in
// bench/progress, Python's outputs in bench/pyout and stampede's in
// bench/report.
package bench
