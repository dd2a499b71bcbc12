package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/stampede-bench/stampede/bench"
	"github.com/stampede-bench/stampede/bench/search"
)

const sloUsage = `usage: stampede slo [serve options] --goodput KEY:MS [KEY:MS ...]
                    [--slo-over max-concurrency|request-rate] [--slo-attainment F]
                    [--slo-start LOAD] [--slo-max LOAD] [--slo-tolerance F]

Finds the highest load at which at least --slo-attainment of all requests
meet every --goodput objective (KEY in ttft, tpot, e2el; MS in
milliseconds): brackets by doubling from --slo-start, then bisects until
the bracket is within --slo-tolerance. Every probe is a normal run of the
serve options (its block goes to stderr; with --save-result its result
JSON and slo.json go to --result-dir).

  --slo-over FLAG       the load searched (default max-concurrency)
  --slo-attainment F    share of requests that must meet the SLOs (default 0.99)
  --slo-start LOAD      the first probe's load (default 1)
  --slo-max LOAD        the highest load probed (default: no bound; a
                        concurrency stops at --num-prompts, all in flight)
  --slo-tolerance F     relative width of the final bracket (default 0.05)
`

// runSLO is `stampede slo`.
func runSLO(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	own, rest, err := search.SplitOwnFlags(args, []search.OwnFlag{
		{Name: "slo-over", Value: true}, {Name: "slo-attainment", Value: true}, {Name: "slo-start", Value: true},
		{Name: "slo-max", Value: true}, {Name: "slo-tolerance", Value: true}, {Name: "help"}, {Name: "h"},
	})
	if err != nil {
		return sloUsageError(stderr, err.Error())
	}
	if own["help"] != nil || own["h"] != nil {
		fmt.Fprint(stdout, sloUsage)
		return exitOK
	}
	opts := search.SLOOptions{Run: bench.RunOnce, Args: rest, Over: search.SLOOverConcurrency, Attainment: 0.99, Tolerance: 0.05, Start: 1}
	if v := own["slo-over"]; v != nil {
		opts.Over = v[0]
	}
	for _, f := range []struct {
		name string
		dst  *float64
		ok   func(float64) bool
		want string
	}{
		{"slo-attainment", &opts.Attainment, func(x float64) bool { return x > 0 && x <= 1 }, "a share of requests in (0, 1], such as 0.99"},
		{"slo-start", &opts.Start, func(x float64) bool { return x > 0 }, "a positive load"},
		{"slo-max", &opts.Max, func(x float64) bool { return x > 0 }, "a positive load"},
		{"slo-tolerance", &opts.Tolerance, func(x float64) bool { return x > 0 && x < 1 }, "a relative width in (0, 1), such as 0.05"},
	} {
		v := own[f.name]
		if v == nil {
			continue
		}
		x, err := strconv.ParseFloat(v[0], 64)
		if err != nil || !f.ok(x) {
			return sloUsageError(stderr, fmt.Sprintf("argument --%s: invalid value %q: %s", f.name, v[0], f.want))
		}
		*f.dst = x
	}
	_, err = search.SearchSLO(ctx, opts, stdout, stderr)
	return errorForm{name: "stampede slo", usageError: sloUsageError}.exitCode(ctx, err, stderr)
}

func sloUsageError(w io.Writer, msg string) int {
	fmt.Fprintf(w, "%sstampede slo: error: %s\n", sloUsage, msg)
	return exitUsage
}
