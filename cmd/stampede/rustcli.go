package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/bench"
	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/bench/endpoint"
	"github.com/stampede-bench/stampede/bench/multiturn"
	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/search"
	"github.com/stampede-bench/stampede/datasets"
)

// The Rust client vllm-bench turns a serve command line into another
// command with a flag (--compare, --dry-run, --sweep-max-concurrency,
// --sweep-request-rate, --multi-turn); runRustCommand dispatches those to
// stampede's own commands. args is the serve command line as given, cfg its plan.
// handled is false for a plain run.
func runRustCommand(ctx context.Context, args []string, cfg *plan.Plan, stdout, stderr io.Writer) (code int, handled bool) {
	switch {
	case cfg.Given("compare"):
		return runCompare(cfg.Compare, stdout, stderr), true
	case cfg.DryRun:
		return runDryRun(ctx, cfg, stdout, stderr), true
	case cli.RustSweep(cfg):
		return runRustSweep(ctx, args, cfg, stdout, stderr), true
	case cfg.MultiTurn:
		return exitCode(ctx, multiturn.RustCommand(ctx, cfg, stdout, stderr), stderr), true
	case cfg.ResetPrefixCache:
		// Outside a sweep, the one run starts cold.
		if err := resetPrefixCache(ctx, cfg); err != nil {
			return failed(stderr, err), true
		}
	}
	return 0, false
}

// runRustSweep is --sweep-max-concurrency / --sweep-request-rate: `stampede
// sweep` over those axes (both given: their product), the summary table on
// stdout.
func runRustSweep(ctx context.Context, args []string, cfg *plan.Plan, stdout, stderr io.Writer) int {
	rest, err := cli.WithoutRustCommandFlags(args)
	if err != nil {
		return failed(stderr, err)
	}
	if cfg.SummaryPercentiles != nil {
		rest = append(rest, "--metric-percentiles", cli.RustSweepMetricPercentiles(cfg))
	}
	opts := search.SweepOptions{Run: bench.RunOnce, Args: rest, NumRuns: cfg.NumRuns, SummaryPercentiles: cfg.SummaryPercentiles}
	for _, ax := range []struct{ rust, flag, list string }{
		{"sweep-max-concurrency", "max-concurrency", cfg.SweepMaxConcurrency},
		{"sweep-request-rate", "request-rate", cfg.SweepRequestRate},
	} {
		if !cfg.Given(ax.rust) {
			continue
		}
		axis, err := search.ParseSweepAxis(ax.flag + "=" + ax.list)
		if err != nil {
			return failed(stderr, err)
		}
		opts.Axes = append(opts.Axes, axis)
	}
	if cfg.SweepNumPromptsFactor != nil {
		opts.NumPromptsFactor = *cfg.SweepNumPromptsFactor
	}
	if cfg.ResetPrefixCache {
		opts.BeforePoint = resetPrefixCache
	}
	_, err = search.Sweep(ctx, opts, stdout, stderr)
	return exitCode(ctx, err, stderr)
}

// resetPrefixCache is --reset-prefix-cache: the server's prefix cache
// emptied before a run.
func resetPrefixCache(ctx context.Context, cfg *plan.Plan) error {
	s, err := endpoint.New(cfg)
	if err != nil {
		return err
	}
	return s.ResetPrefixCache(ctx, "--reset-prefix-cache")
}

// runDryRun is --dry-run: the dataset sampled as `stampede dataset`
// samples it, its statistics printed, nothing sent; the requests are
// counted as they come, none kept.
func runDryRun(ctx context.Context, cfg *plan.Plan, stdout, stderr io.Writer) int {
	start := time.Now()
	var st dryRunStats
	if err := streamRequests(ctx, cfg, stdout, stderr, st.add); err != nil {
		return failed(stderr, err)
	}
	st.write(stdout, cfg.DatasetName, time.Since(start))
	return exitOK
}

// dryRunStats are the dataset's statistics, counted a batch at a time.
type dryRunStats struct {
	requests int
	in, out  span
	text     int
}

type span struct{ min, max, sum int }

func (s *span) add(v int, first bool) {
	if first || v < s.min {
		s.min = v
	}
	s.max = max(s.max, v)
	s.sum += v
}

func (st *dryRunStats) add(batch []datasets.Request) error {
	for i := range batch {
		r := &batch[i]
		first := st.requests == 0
		st.in.add(r.PromptLen, first)
		st.out.add(r.ExpectedOutputLen, first)
		st.requests++
	}
	st.text += promptBytes(batch)
	return nil
}

// write prints the statistics as a block in the style of the result
// block.
func (st *dryRunStats) write(w io.Writer, dataset string, took time.Duration) {
	mean := func(s span) float64 {
		if st.requests == 0 {
			return 0
		}
		return float64(s.sum) / float64(st.requests)
	}
	line := func(label string, format string, a ...any) {
		fmt.Fprintf(w, "%-40s %s\n", label, fmt.Sprintf(format, a...))
	}
	fmt.Fprintf(w, "%s\n", centre(" Dry Run: Dataset ", 50, "="))
	line("Dataset:", "%s", dataset)
	line("Requests:", "%d", st.requests)
	line("Input tokens (min / mean / max):", "%d / %.2f / %d", st.in.min, mean(st.in), st.in.max)
	line("Output tokens (min / mean / max):", "%d / %.2f / %d", st.out.min, mean(st.out), st.out.max)
	line("Total input tokens:", "%d", st.in.sum)
	line("Total output tokens (expected):", "%d", st.out.sum)
	line("Prompt text (bytes):", "%d", st.text)
	line("Sampled in (s):", "%.3f", took.Seconds())
	line("Requests sent:", "0 (--dry-run)")
	fmt.Fprintln(w, strings.Repeat("=", 50))
}

func centre(s string, width int, fill string) string {
	if len(s) >= width {
		return s
	}
	left := (width - len(s)) / 2
	return strings.Repeat(fill, left) + s + strings.Repeat(fill, width-len(s)-left)
}
