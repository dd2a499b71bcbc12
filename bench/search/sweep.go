package search

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/bench/backend"
	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/bench/outcome"
	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/internal/py"
	"github.com/stampede-bench/stampede/metrics"
)

// A sweep is a grid of normal runs: `stampede sweep [serve flags] --sweep
// FLAG=V1,V2,...` runs the serve flags with FLAG set to each value in
// turn (several --sweep flags make the product, the first one outermost),
// each point --num-runs times, pausing --sweep-cooldown-sec between runs.
// Every run saves its result JSON in --result-dir (named after the point,
// "sweep-FLAG=V[,FLAG2=V2][.runK].json"); after each finished point the
// summary is saved there as sweep.json and sweep.csv, so an interrupt
// keeps every finished point and --resume runs only the points missing
// from sweep.json.

// ParseSweepAxis reads one --sweep value.
func ParseSweepAxis(s string) (report.SweepAxis, error) {
	flag, values, ok := strings.Cut(s, "=")
	flag = strings.TrimPrefix(flag, "--")
	bad := func(why string) (report.SweepAxis, error) {
		return report.SweepAxis{}, &py.UsageError{Msg: fmt.Sprintf("argument --sweep: invalid value %q: %s; expected FLAG=V1,V2,... such as max-concurrency=8,32,128", s, why)}
	}
	if !ok || flag == "" {
		return bad("no FLAG=")
	}
	a := report.SweepAxis{Flag: flag}
	for _, v := range strings.Split(values, ",") {
		if v = strings.TrimSpace(v); v == "" {
			return bad("an empty value")
		}
		a.Values = append(a.Values, v)
	}
	return a, nil
}

// SweepOptions are a sweep's settings beside the serve flags.
type SweepOptions struct {
	// Args are the serve flags every point starts from.
	Args     []string
	Axes     []report.SweepAxis
	NumRuns  int
	Cooldown time.Duration
	Resume   bool
	// NumPromptsFactor, when above 0, gives each point of a
	// max-concurrency axis --num-prompts of its concurrency times the
	// factor (the Rust client's --sweep-num-prompts-factor).
	NumPromptsFactor int
	// BeforePoint, when set, runs before each run of the grid (the Rust
	// client's --reset-prefix-cache); an error stops the sweep.
	BeforePoint func(ctx context.Context, cfg *plan.Plan) error
	// SummaryPercentiles add a TTFT, TPOT and E2EL column per percentile
	// to the summary (the Rust client's --sweep-summary-percentiles).
	SummaryPercentiles []float64
	// Run makes each run of the grid.
	Run RunFunc
}

// sweepPoint is one point of the grid, with its runs' configurations.
type sweepPoint struct {
	settings []report.SweepSetting
	name     string
	cfgs     []*plan.Plan
	files    []string
}

// grid lists the points, checking every run's flags before any starts.
func (o *SweepOptions) grid(dir string) ([]sweepPoint, error) {
	points := []sweepPoint{{}}
	for _, ax := range o.Axes {
		var next []sweepPoint
		for _, p := range points {
			for _, v := range ax.Values {
				q := sweepPoint{settings: append(append([]report.SweepSetting(nil), p.settings...), report.SweepSetting{Flag: ax.Flag, Value: v})}
				next = append(next, q)
			}
		}
		points = next
	}
	for i := range points {
		p := &points[i]
		var parts []string
		args := append([]string(nil), o.Args...)
		for _, s := range p.settings {
			parts = append(parts, s.Flag+"="+s.Value)
			args = append(args, "--"+s.Flag, s.Value)
			if n, err := strconv.Atoi(s.Value); err == nil && o.NumPromptsFactor > 0 && s.Flag == "max-concurrency" {
				args = append(args, "--num-prompts", strconv.Itoa(n*o.NumPromptsFactor))
			}
		}
		p.name = strings.Join(parts, ",")
		for k := 1; k <= o.NumRuns; k++ {
			file := "sweep-" + strings.ReplaceAll(p.name, "/", "_") + ".json"
			if o.NumRuns > 1 {
				file = runFileName(file, k)
			}
			cfg, err := cli.Parse(append(args, "--save-result", "--result-dir", dir, "--result-filename", file), backend.Choices())
			if err == nil {
				err = cli.RefuseAgents(cfg, "stampede sweep")
			}
			if err != nil {
				var usage *py.UsageError
				if errors.As(err, &usage) {
					usage.Msg = fmt.Sprintf("sweep point %s: %s", p.name, usage.Msg)
				}
				return nil, err
			}
			p.cfgs = append(p.cfgs, cfg)
			p.files = append(p.files, py.PathJoin(dir, file))
		}
	}
	return points, nil
}

// Sweep runs the grid and returns its summary, printed to stdout at the
// end and saved after every point; the runs' own blocks go to stderr, so
// stdout is the table alone. An interrupt stops it after
// the run it cut short, which is not counted.
func Sweep(ctx context.Context, o SweepOptions, stdout, stderr io.Writer) (*report.SweepResult, error) {
	if o.NumRuns < 1 {
		o.NumRuns = 1
	}
	base, err := cli.Parse(o.Args, backend.Choices())
	if err != nil {
		return nil, err
	}
	if err := cli.RefuseRustOptions(base, "sweep", false); err != nil {
		return nil, err
	}
	if err := cli.RefuseAgents(base, "stampede sweep"); err != nil {
		return nil, err
	}
	stderr = newOnceWarnings(stderr)
	writeParseWarnings(stderr, base)
	dir := base.ResultDir
	if dir == "" {
		dir = "."
	}
	points, err := o.grid(dir)
	if err != nil {
		return nil, err
	}
	res := &report.SweepResult{Axes: o.Axes, NumRuns: o.NumRuns, SummaryPercentiles: o.SummaryPercentiles}
	done := map[string]report.SweepRow{}
	if o.Resume {
		prev, err := report.LoadSweep(filepath.Join(dir, report.SweepFileJSON))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("--resume: %w", err)
		}
		if prev != nil {
			for _, r := range prev.Rows {
				if len(r.Runs) >= o.NumRuns {
					done[r.Point] = r
				}
			}
		}
	}
	first := true
	for _, p := range points {
		if row, ok := done[p.name]; ok {
			fmt.Fprintf(stderr, "sweep: %s already saved, skipped (--resume)\n", p.name)
			res.Rows = append(res.Rows, row)
			continue
		}
		row := report.SweepRow{Point: p.name, Settings: p.settings}
		for k, cfg := range p.cfgs {
			if !first && !sleepCtx(ctx, o.Cooldown) {
				break
			}
			first = false
			fmt.Fprintf(stderr, "Sweep point %s", p.name)
			if o.NumRuns > 1 {
				fmt.Fprintf(stderr, ", run %d of %d", k+1, o.NumRuns)
			}
			fmt.Fprintln(stderr)
			if o.BeforePoint != nil {
				if err := o.BeforePoint(ctx, cfg); err != nil {
					return res, fmt.Errorf("sweep point %s: %w", p.name, err)
				}
			}
			out, err := o.Run(ctx, cfg, stderr, stderr)
			if err != nil {
				return res, err
			}
			if out == nil || out.Cancelled || ctx.Err() != nil {
				break
			}
			pm, err := out.Point()
			if err == nil {
				err = addSummaryPercentiles(&pm, out, o.SummaryPercentiles)
			}
			if err != nil {
				return res, err
			}
			row.Runs = append(row.Runs, pm)
			row.Files = append(row.Files, p.files[k])
		}
		if ctx.Err() != nil {
			break
		}
		row.Metrics = report.MeanPoint(row.Runs)
		if len(row.Runs) > 1 {
			row.Spread = report.SpreadsJSON(report.SpreadOfPoints(row.Runs))
		}
		res.Rows = append(res.Rows, row)
		if err := res.Save(dir); err != nil {
			return res, err
		}
	}
	if err := res.WriteTable(stdout); err != nil {
		return res, err
	}
	if o.NumRuns > 1 {
		for _, r := range res.Rows {
			if err := report.WriteSpread(stdout, r.Point, r.Runs); err != nil {
				return res, err
			}
		}
	}
	return res, ctx.Err()
}

// addSummaryPercentiles puts the run's TTFT, TPOT and E2EL at each of ps
// into pm.Extra, computed with Python's formulas as the headline figures
// are.
func addSummaryPercentiles(pm *report.PointMetrics, out *outcome.Outcome, ps []float64) error {
	if len(ps) == 0 {
		return nil
	}
	opts := out.Options
	opts.Percentiles = ps
	s, err := metrics.Compute(out.Data, opts)
	if err != nil {
		return err
	}
	pm.Extra = map[string]float64{}
	for _, m := range []struct {
		name string
		st   *metrics.Stats
	}{{"ttft", &s.TTFT}, {"tpot", &s.TPOT}, {"e2el", &s.E2EL}} {
		for _, p := range m.st.Percentiles {
			pm.Extra[report.ExtraKey(m.name, p.P)] = p.ValueMs
		}
	}
	return nil
}
