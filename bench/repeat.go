package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/bench/report"
)

// OwnFlag is a flag of stampede's run-based commands (sweep, slo,
// --num-runs) that the `vllm bench serve` parser must not see.
type OwnFlag struct {
	Name string // long name without dashes
	// Value is set for a flag taking a value; a switch takes none.
	Value bool
	// Repeat allows the flag more than once.
	Repeat bool
}

// SplitOwnFlags takes own's flags ("--name value" or "--name=value") out
// of args, leaving serve's in their order. A repeated non-Repeat flag
// keeps its last value, as argparse does.
func SplitOwnFlags(args []string, own []OwnFlag) (map[string][]string, []string, error) {
	found := map[string][]string{}
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		var f *OwnFlag
		for j := range own {
			if strings.HasPrefix(a, "--") && own[j].Name == name {
				f = &own[j]
			}
		}
		if f == nil {
			rest = append(rest, a)
			continue
		}
		switch {
		case !f.Value && hasValue:
			return nil, nil, &cli.UsageError{Msg: fmt.Sprintf("argument --%s: ignored explicit argument '%s'", name, value)}
		case !f.Value:
			value = "true"
		case !hasValue:
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "--") {
				return nil, nil, &cli.UsageError{Msg: fmt.Sprintf("argument --%s: expected one argument", name)}
			}
			i++
			value = args[i]
		}
		if f.Repeat {
			found[name] = append(found[name], value)
		} else {
			found[name] = []string{value}
		}
	}
	return found, rest, nil
}

// ParseNumRuns reads --num-runs: a whole number of runs, at least 1.
func ParseNumRuns(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, &cli.UsageError{Msg: fmt.Sprintf("argument --num-runs: invalid value %q: a whole number of runs, 1 or more", s)}
	}
	return n, nil
}

// RunRepeated is `stampede serve --num-runs N`: N runs of cfg one after
// another, each printing its own block; then the spread of every
// headline figure over the runs. Every run's result JSON is kept: when
// N > 1, the file of run k gets ".runK" before its extension (with
// --append-result all runs go to the one file, one per line). An
// interrupt ends the series after the run it cut short, whose figures
// are left out of the summary.
func RunRepeated(ctx context.Context, cfg *cli.Config, n int, stdout, stderr io.Writer) error {
	var points []report.PointMetrics
	for k := 1; k <= n; k++ {
		if n > 1 {
			fmt.Fprintf(stdout, "Run %d of %d\n", k, n)
		}
		o, err := RunOnce(ctx, cfg, stdout, stderr)
		if o != nil && o.ResultPath != "" && n > 1 && !cfg.AppendResult {
			if rerr := os.Rename(o.ResultPath, runFileName(o.ResultPath, k)); rerr != nil && err == nil {
				err = rerr
			}
		}
		if err != nil {
			return err
		}
		if o == nil || o.Cancelled || ctx.Err() != nil {
			break
		}
		pm, err := o.Point()
		if err != nil {
			return err
		}
		points = append(points, pm)
	}
	if n > 1 {
		return report.WriteSpread(stdout, fmt.Sprintf("Repeated runs (%d of %d)", len(points), n), points)
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
