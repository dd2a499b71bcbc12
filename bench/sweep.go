package bench

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/bench/pyout"
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

// SweepFileJSON and SweepFileCSV are the sweep's summary files.
const (
	SweepFileJSON = "sweep.json"
	SweepFileCSV  = "sweep.csv"
)

// SweepAxis is one --sweep FLAG=V1,V2,...: a serve flag and its values.
type SweepAxis struct {
	Flag   string   `json:"flag"`
	Values []string `json:"values"`
}

// ParseSweepAxis reads one --sweep value.
func ParseSweepAxis(s string) (SweepAxis, error) {
	flag, values, ok := strings.Cut(s, "=")
	flag = strings.TrimPrefix(flag, "--")
	bad := func(why string) (SweepAxis, error) {
		return SweepAxis{}, &cli.UsageError{Msg: fmt.Sprintf("argument --sweep: invalid value %q: %s; expected FLAG=V1,V2,... such as max-concurrency=8,32,128", s, why)}
	}
	if !ok || flag == "" {
		return bad("no FLAG=")
	}
	a := SweepAxis{Flag: flag}
	for _, v := range strings.Split(values, ",") {
		if v = strings.TrimSpace(v); v == "" {
			return bad("an empty value")
		}
		a.Values = append(a.Values, v)
	}
	return a, nil
}

// SweepSetting is one flag's value at a point.
type SweepSetting struct {
	Flag  string `json:"flag"`
	Value string `json:"value"`
}

// SweepRow is one finished point.
type SweepRow struct {
	// Point names the point: its settings as FLAG=V joined with commas.
	Point    string         `json:"point"`
	Settings []SweepSetting `json:"settings"`
	// Files are the result JSON files of the point's runs.
	Files []string `json:"result_files"`
	// Runs are each run's figures; Metrics their mean.
	Runs    []PointMetrics `json:"runs"`
	Metrics PointMetrics   `json:"metrics"`
	// Spread is each figure's spread over the runs, with two or more.
	Spread map[string]spreadJSON `json:"spread,omitempty"`
}

// SweepResult is the content of sweep.json.
type SweepResult struct {
	Axes    []SweepAxis `json:"axes"`
	NumRuns int         `json:"num_runs"`
	Rows    []SweepRow  `json:"rows"`
}

// SweepOptions are a sweep's settings beside the serve flags.
type SweepOptions struct {
	// Args are the serve flags every point starts from.
	Args     []string
	Axes     []SweepAxis
	NumRuns  int
	Cooldown time.Duration
	Resume   bool
}

// sweepPoint is one point of the grid, with its runs' configurations.
type sweepPoint struct {
	settings []SweepSetting
	name     string
	cfgs     []*cli.Config
	files    []string
}

// grid lists the points, checking every run's flags before any starts.
func (o *SweepOptions) grid(dir string) ([]sweepPoint, error) {
	points := []sweepPoint{{}}
	for _, ax := range o.Axes {
		var next []sweepPoint
		for _, p := range points {
			for _, v := range ax.Values {
				q := sweepPoint{settings: append(append([]SweepSetting(nil), p.settings...), SweepSetting{ax.Flag, v})}
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
		}
		p.name = strings.Join(parts, ",")
		for k := 1; k <= o.NumRuns; k++ {
			file := "sweep-" + strings.ReplaceAll(p.name, "/", "_") + ".json"
			if o.NumRuns > 1 {
				file = runFileName(file, k)
			}
			cfg, err := cli.Parse(append(args, "--save-result", "--result-dir", dir, "--result-filename", file), Backends())
			if err != nil {
				var usage *cli.UsageError
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
func Sweep(ctx context.Context, o SweepOptions, stdout, stderr io.Writer) (*SweepResult, error) {
	if o.NumRuns < 1 {
		o.NumRuns = 1
	}
	base, err := cli.Parse(o.Args, Backends())
	if err != nil {
		return nil, err
	}
	dir := base.ResultDir
	if dir == "" {
		dir = "."
	}
	points, err := o.grid(dir)
	if err != nil {
		return nil, err
	}
	res := &SweepResult{Axes: o.Axes, NumRuns: o.NumRuns}
	done := map[string]SweepRow{}
	if o.Resume {
		prev, err := LoadSweep(filepath.Join(dir, SweepFileJSON))
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
		row := SweepRow{Point: p.name, Settings: p.settings}
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
			out, err := RunOnce(ctx, cfg, stderr, stderr)
			if err != nil {
				return res, err
			}
			if out == nil || out.Cancelled || ctx.Err() != nil {
				break
			}
			pm, err := out.Point()
			if err != nil {
				return res, err
			}
			row.Runs = append(row.Runs, pm)
			row.Files = append(row.Files, p.files[k])
		}
		if ctx.Err() != nil {
			break
		}
		row.Metrics = meanPoint(row.Runs)
		if len(row.Runs) > 1 {
			row.Spread = spreadsJSON(SpreadOfPoints(row.Runs))
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
			if err := WriteSpread(stdout, r.Point, r.Runs); err != nil {
				return res, err
			}
		}
	}
	return res, ctx.Err()
}

// meanPoint is the figures' mean over runs.
func meanPoint(runs []PointMetrics) PointMetrics {
	if len(runs) == 1 {
		return runs[0]
	}
	var m PointMetrics
	if len(runs) == 0 {
		return m
	}
	n := float64(len(runs))
	var good, att float64
	for _, r := range runs {
		m.Completed += r.Completed
		m.Failed += r.Failed
		for _, f := range [][2]*float64{
			{&m.RequestThroughput, &r.RequestThroughput}, {&m.OutputThroughput, &r.OutputThroughput},
			{&m.TTFTP50, &r.TTFTP50}, {&m.TTFTP99, &r.TTFTP99}, {&m.TPOTP50, &r.TPOTP50}, {&m.TPOTP99, &r.TPOTP99},
			{&m.ITLP50, &r.ITLP50}, {&m.ITLP99, &r.ITLP99}, {&m.E2ELP50, &r.E2ELP50}, {&m.E2ELP99, &r.E2ELP99},
		} {
			*f[0] += *f[1] / n
		}
		good += orNaN(r.RequestGoodput) / n
		att += orNaN(r.Attainment) / n
	}
	m.Completed /= len(runs)
	m.Failed /= len(runs)
	if !math.IsNaN(good) {
		m.RequestGoodput = &good
	}
	if !math.IsNaN(att) {
		m.Attainment = &att
	}
	return m
}

// spreadJSON is a metrics.Spread whose NaNs (one run) are written null.
type spreadJSON struct {
	N      int      `json:"n"`
	Mean   *float64 `json:"mean"`
	StdDev *float64 `json:"stddev"`
	CILow  *float64 `json:"ci95_low"`
	CIHigh *float64 `json:"ci95_high"`
	CV     *float64 `json:"cv"`
}

func spreadsJSON(m map[string]metrics.Spread) map[string]spreadJSON {
	num := func(f float64) *float64 {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
		return &f
	}
	out := make(map[string]spreadJSON, len(m))
	for k, s := range m {
		out[k] = spreadJSON{N: s.N, Mean: num(s.Mean), StdDev: num(s.StdDev), CILow: num(s.CILow), CIHigh: num(s.CIHigh), CV: num(s.CV)}
	}
	return out
}

// LoadSweep reads a saved sweep.json.
func LoadSweep(path string) (*SweepResult, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r SweepResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// Save writes sweep.json and sweep.csv in dir, each through a temporary
// file renamed into place, so an interrupt never leaves half a file.
func (r *SweepResult) Save(dir string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, SweepFileJSON), append(b, '\n')); err != nil {
		return err
	}
	var sb strings.Builder
	cw := csv.NewWriter(&sb)
	if err := cw.WriteAll(r.records(false)); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, SweepFileCSV), []byte(sb.String()))
}

func writeAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o666); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// records is the table: a header, then one record per row. forPeople
// selects the short column names and two decimals.
func (r *SweepResult) records(forPeople bool) [][]string {
	var head []string
	for _, a := range r.Axes {
		head = append(head, a.Flag)
	}
	if r.NumRuns > 1 {
		head = append(head, "runs")
	}
	for _, f := range pointFigures {
		if forPeople {
			head = append(head, f.name)
		} else {
			head = append(head, f.key)
		}
	}
	out := [][]string{head}
	for _, row := range r.Rows {
		var rec []string
		for _, s := range row.Settings {
			rec = append(rec, s.Value)
		}
		if r.NumRuns > 1 {
			rec = append(rec, strconv.Itoa(len(row.Runs)))
		}
		for _, f := range pointFigures {
			v := f.get(&row.Metrics)
			switch {
			case math.IsNaN(v) && forPeople:
				rec = append(rec, "-")
			case math.IsNaN(v):
				rec = append(rec, "")
			case forPeople:
				rec = append(rec, strconv.FormatFloat(v, 'f', 2, 64))
			default:
				rec = append(rec, strconv.FormatFloat(v, 'g', -1, 64))
			}
		}
		out = append(out, rec)
	}
	return out
}

// WriteTable prints the summary: one row per point, the swept values
// then the headline figures (latencies in ms).
func (r *SweepResult) WriteTable(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, py.FormatCenter(" Sweep Summary ", '=', pyout.BlockWidth))
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, rec := range r.records(true) {
		fmt.Fprintln(tw, strings.Join(rec, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return bw.Flush()
}
