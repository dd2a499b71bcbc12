// Package bench orchestrates a `vllm bench serve`-compatible run: ready
// check, warm-up, profiling, the main run through the engine, and the
// outputs (console block, result JSON); it also builds the backends'
// request bodies. The command line it runs from is package bench/cli's.
package bench
