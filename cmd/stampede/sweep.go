package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/stampede-bench/stampede/bench"
	"github.com/stampede-bench/stampede/bench/search"
)

const sweepUsage = `usage: stampede sweep [serve options] --sweep FLAG=V1,V2,... [--sweep FLAG2=...]
                      [--sweep-cooldown-sec S] [--num-runs N] [--resume]

Runs the serve options once per point of the grid (several --sweep flags
make the product), each point a normal run saving its result JSON in
--result-dir (its block on stderr), and prints a summary table on stdout,
also saved there as sweep.csv and sweep.json.

  --sweep FLAG=V1,V2,...   a serve flag and its values, such as max-concurrency=8,32,128
  --sweep-cooldown-sec S   pause between runs (default 0)
  --num-runs N             runs per point: mean, 95% CI and CV per figure (default 1)
  --resume                 skip the points already in --result-dir's sweep.json
`

// runSweep is `stampede sweep`.
func runSweep(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	own, rest, err := search.SplitOwnFlags(args, []search.OwnFlag{
		{Name: "sweep", Value: true, Repeat: true}, {Name: "sweep-cooldown-sec", Value: true},
		{Name: "num-runs", Value: true}, {Name: "resume"}, {Name: "help"}, {Name: "h"},
	})
	if err != nil {
		return sweepUsageError(stderr, err.Error())
	}
	if own["help"] != nil || own["h"] != nil {
		fmt.Fprint(stdout, sweepUsage)
		return exitOK
	}
	opts := search.SweepOptions{Run: bench.RunOnce, Args: rest, NumRuns: 1, Resume: own["resume"] != nil}
	for _, s := range own["sweep"] {
		ax, err := search.ParseSweepAxis(s)
		if err != nil {
			return sweepUsageError(stderr, err.Error())
		}
		opts.Axes = append(opts.Axes, ax)
	}
	if len(opts.Axes) == 0 {
		return sweepUsageError(stderr, "the following arguments are required: --sweep FLAG=V1,V2,...")
	}
	if v := own["sweep-cooldown-sec"]; v != nil {
		sec, err := strconv.ParseFloat(v[0], 64)
		if err != nil || sec < 0 {
			return sweepUsageError(stderr, fmt.Sprintf("argument --sweep-cooldown-sec: invalid value %q: seconds, 0 or more", v[0]))
		}
		opts.Cooldown = time.Duration(sec * float64(time.Second))
	}
	if v := own["num-runs"]; v != nil {
		if opts.NumRuns, err = search.ParseNumRuns(v[0]); err != nil {
			return sweepUsageError(stderr, err.Error())
		}
	}
	_, err = search.Sweep(ctx, opts, stdout, stderr)
	return errorForm{name: "stampede sweep", usageError: sweepUsageError}.exitCode(ctx, err, stderr)
}

func sweepUsageError(w io.Writer, msg string) int {
	fmt.Fprintf(w, "%sstampede sweep: error: %s\n", sweepUsage, msg)
	return exitUsage
}
