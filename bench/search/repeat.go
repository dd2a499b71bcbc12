// Package search holds the commands built from runs: --num-runs (repeat),
// sweep, the SLO search, and compare over saved results. They receive the
// run function from the command, which wires them; they never import the
// run's package.
package search

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/bench/outcome"
	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/report"
)

// RunFunc is one run of a parsed configuration, returning what it
// measured (bench.RunOnce): nil when the run ended before its main part.
type RunFunc func(ctx context.Context, cfg *plan.Plan, stdout, stderr io.Writer) (*outcome.Outcome, error)

// RunRepeated is `stampede serve --num-runs N`: N runs of cfg one after
// another, each printing its own block; then the spread of every
// headline figure over the runs. Every run's result JSON is kept: when
// N > 1, the file of run k gets ".runK" before its extension (with
// --append-result all runs go to the one file, one per line). An
// interrupt ends the series after the run it cut short, whose figures
// are left out of the summary.
func RunRepeated(ctx context.Context, run RunFunc, cfg *plan.Plan, n int, stdout, stderr io.Writer) error {
	_, err := runRepeated(ctx, run, cfg, n, stdout, stderr)
	return err
}

// runRepeated is RunRepeated returning the result files written, each
// once, in run order.
func runRepeated(ctx context.Context, run RunFunc, cfg *plan.Plan, n int, stdout, stderr io.Writer) ([]string, error) {
	var points []report.PointMetrics
	var files []string
	for k := 1; k <= n; k++ {
		if n > 1 {
			fmt.Fprintf(stdout, "Run %d of %d\n", k, n)
		}
		o, err := run(ctx, cfg, stdout, stderr)
		if o != nil && o.ResultPath != "" {
			path := o.ResultPath
			if n > 1 && !cfg.AppendResult {
				path = runFileName(o.ResultPath, k)
				if rerr := renameResult(o.ResultPath, path); rerr != nil && err == nil {
					err = rerr
				}
			}
			if len(files) == 0 || files[len(files)-1] != path {
				files = append(files, path)
			}
		}
		if err != nil {
			return files, err
		}
		if o == nil || o.Cancelled || ctx.Err() != nil {
			break
		}
		pm, err := o.Point()
		if err != nil {
			return files, err
		}
		points = append(points, pm)
	}
	if n > 1 {
		return files, report.WriteSpread(stdout, fmt.Sprintf("Repeated runs (%d of %d)", len(points), n), points)
	}
	return files, nil
}

// renameResult renames a result file and its sidecar, which the run
// wrote beside it (the sidecar's fingerprint and manifest must stay with
// their result).
func renameResult(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return err
	}
	if err := os.Rename(report.SidecarPath(from), report.SidecarPath(to)); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// runFileName is path with ".runK" before its extension.
func runFileName(path string, k int) string {
	ext := ""
	if i := strings.LastIndexByte(path, '.'); i > strings.LastIndexByte(path, '/') {
		path, ext = path[:i], path[i:]
	}
	return fmt.Sprintf("%s.run%d%s", path, k, ext)
}

// sleepCtx waits d or until ctx is done; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
