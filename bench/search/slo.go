package search

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/stampede-bench/stampede/bench/backend"
	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/internal/py"
)

// `stampede slo` finds the most load a server takes while meeting its
// SLOs: the highest --max-concurrency (or --request-rate) at which at
// least --slo-attainment of all requests (failures count as misses) meet
// every --goodput objective. Each probe is a normal run of the serve
// flags with the load flag set.
//
// The search brackets, then bisects. From --slo-start it doubles the
// load while probes pass (halves it while they fail), which gives a
// passing load lo and a failing load hi; then it probes the middle until
// (hi − lo)/hi ≤ --slo-tolerance (5 %), or for concurrency until hi − lo
// is 1. The answer is lo, with its measured attainment.
//
// Doubling stops early when the server is saturated: the request
// throughput grew by less than 5 % while the median end-to-end latency
// grew by 10 % or more. More load then only queues; the answer is the
// highest passing load probed, marked as limited by capacity, not by the
// SLOs. It stops too when the load stopped growing: throughput grew by
// less than 5 % and latency by less than 10 %, so the doubled flag did not
// reach the server (every request was already in flight, or a fixed
// --request-rate held the concurrency down).
//
// A concurrency above --num-prompts is the same run as --num-prompts
// itself: every request is in flight at once. The search caps the
// concurrency there (and says so), as it caps any load at --slo-max; a
// search that passes at its cap says that every probe met the SLOs and
// what to raise to search further.

// SLO search directions.
const (
	SLOOverConcurrency = "max-concurrency"
	SLOOverRate        = "request-rate"
)

// SLOOptions are a search's settings beside the serve flags.
type SLOOptions struct {
	// Args are the serve flags of every probe; they must set --goodput.
	Args []string
	// Over is the load flag searched: SLOOverConcurrency or SLOOverRate.
	Over string
	// Attainment is the share of requests that must meet the SLOs (0.99).
	Attainment float64
	// Start is the first probe's load (default 1).
	Start float64
	// Max bounds the load probed (0: no bound).
	Max float64
	// Tolerance is the relative width the bracket is narrowed to (0.05).
	Tolerance float64
	// Run makes each probe's run.
	Run RunFunc
}

// SLOProbe is one probe's outcome.
type SLOProbe struct {
	Load       float64             `json:"load"`
	Attainment float64             `json:"slo_attainment"`
	Pass       bool                `json:"pass"`
	Metrics    report.PointMetrics `json:"metrics"`
	// File is the probe's result JSON, with --save-result.
	File string `json:"result_file,omitempty"`
}

// SLOResult is the search's answer and every probe, in order.
type SLOResult struct {
	Over       string            `json:"over"`
	Goodput    []plan.GoodputSLO `json:"goodput"`
	Attainment float64           `json:"target_attainment"`
	Probes     []SLOProbe        `json:"probes"`
	// Answer is the highest passing load; null when even the lowest
	// probed load failed.
	Answer *SLOProbe `json:"answer"`
	// FailedAt is the lowest failing load above the answer, 0 if none.
	FailedAt float64 `json:"failed_at,omitempty"`
	// Saturated is set when the search stopped at the server's capacity.
	Saturated bool `json:"saturated"`
	// Stop says why the search stopped with every probe above the
	// answer untried: "saturated", "load_flat" (more of the flag did not
	// reach the server), "num_prompts" (the concurrency cap) or "slo_max";
	// "" when a failing probe bounds the answer or nothing passed.
	Stop string `json:"stopped_by,omitempty"`
	// Cap is the highest load the search would probe: --slo-max, or for
	// concurrency --num-prompts when lower; 0 for none.
	Cap float64 `json:"cap,omitempty"`
}

// Why a search stopped below no failing probe (SLOResult.Stop).
const (
	StopSaturated  = "saturated"
	StopLoadFlat   = "load_flat"
	StopNumPrompts = "num_prompts"
	StopSLOMax     = "slo_max"
)

// SLOFileJSON is the search's summary, saved in --result-dir with
// --save-result.
const SLOFileJSON = "slo.json"

type sloSearch struct {
	o              SLOOptions
	base           *plan.Plan
	stdout, stderr io.Writer
	res            *SLOResult
	// measure runs one probe: the load's figures and result file; nil
	// figures without error when an interrupt cut the run short.
	measure func(ctx context.Context, load float64) (*report.PointMetrics, string, error)
}

// SearchSLO runs the search. Probe runs print their blocks on stderr; a
// line per probe and the answer go to stdout. An interrupt ends the
// search after the probe it cut short, which is not counted.
func SearchSLO(ctx context.Context, o SLOOptions, stdout, stderr io.Writer) (*SLOResult, error) {
	if o.Over != SLOOverConcurrency && o.Over != SLOOverRate {
		return nil, &py.UsageError{Msg: fmt.Sprintf("argument --slo-over: invalid choice: %q (choose from %q, %q)", o.Over, SLOOverConcurrency, SLOOverRate)}
	}
	if !(o.Attainment > 0 && o.Attainment <= 1) {
		return nil, &py.UsageError{Msg: fmt.Sprintf("argument --slo-attainment: invalid value %g: a share of requests in (0, 1], such as 0.99", o.Attainment)}
	}
	if o.Tolerance == 0 {
		o.Tolerance = 0.05
	}
	if o.Start == 0 {
		o.Start = 1
	}
	if !(o.Start > 0) || (o.Over == SLOOverConcurrency && o.Start != math.Trunc(o.Start)) {
		return nil, &py.UsageError{Msg: fmt.Sprintf("argument --slo-start: invalid value %g: a positive load (a whole number for max-concurrency)", o.Start)}
	}
	base, err := cli.Parse(o.Args, backend.Choices())
	if err == nil {
		err = cli.RefuseRustOptions(base, "slo", false)
	}
	if err == nil {
		err = cli.RefuseAgents(base, "stampede slo")
	}
	if err != nil {
		return nil, err
	}
	if len(base.GoodputSLOs) == 0 {
		return nil, &py.UsageError{Msg: "stampede slo needs the SLOs: --goodput KEY:VALUE ..., such as --goodput ttft:500 tpot:50"}
	}
	stderr = newOnceWarnings(stderr)
	writeParseWarnings(stderr, base)
	s := &sloSearch{o: o, base: base, stdout: stdout, stderr: stderr,
		res: &SLOResult{Over: o.Over, Goodput: base.GoodputSLOs, Attainment: o.Attainment}}
	s.measure = s.run
	fmt.Fprintf(stdout, "Searching the highest %s where %.4g%% of requests meet %s\n", o.Over, 100*o.Attainment, sloText(base.GoodputSLOs))
	if s.capsAtPrompts() {
		fmt.Fprintf(stdout, "max-concurrency is capped at --num-prompts %d: a higher one runs the same %d requests all in flight at once\n",
			base.NumPrompts, base.NumPrompts)
	}
	err = s.search(ctx)
	if err == nil {
		err = ctx.Err()
	}
	s.writeAnswer()
	if base.SaveResult {
		b, jerr := json.MarshalIndent(s.res, "", "  ")
		if jerr == nil {
			jerr = report.WriteFileAtomic(filepath.Join(s.dir(), SLOFileJSON), append(b, '\n'))
		}
		if err == nil {
			err = jerr
		}
	}
	return s.res, err
}

func sloText(slos []plan.GoodputSLO) string {
	var parts []string
	for _, g := range slos {
		parts = append(parts, g.Metric+":"+strconv.FormatFloat(g.ValueMs, 'g', -1, 64)+"ms")
	}
	return strings.Join(parts, " ")
}

func (s *sloSearch) dir() string {
	if s.base.ResultDir == "" {
		return "."
	}
	return s.base.ResultDir
}

// valid rounds a load to what the flag takes: a whole concurrency.
func (s *sloSearch) valid(load float64) float64 {
	if s.o.Over == SLOOverConcurrency {
		return math.Max(1, math.Round(load))
	}
	return load
}

// capsAtPrompts reports whether --num-prompts, not --slo-max, bounds a
// concurrency search.
func (s *sloSearch) capsAtPrompts() bool {
	if s.o.Over != SLOOverConcurrency || s.base == nil || s.base.NumPrompts <= 0 {
		return false
	}
	n := float64(s.base.NumPrompts)
	return s.o.Max == 0 || n < s.o.Max
}

// loadCap is the highest load probed and why: --num-prompts for a
// concurrency (capsAtPrompts), else --slo-max; 0 for no bound.
func (s *sloSearch) loadCap() (float64, string) {
	if s.capsAtPrompts() {
		return float64(s.base.NumPrompts), StopNumPrompts
	}
	if s.o.Max > 0 {
		return s.valid(s.o.Max), StopSLOMax
	}
	return 0, ""
}

func (s *sloSearch) search(ctx context.Context) error {
	limit, limitedBy := s.loadCap()
	s.res.Cap = limit
	load := s.o.Start
	if limit > 0 {
		load = math.Min(load, limit)
	}
	first, err := s.probe(ctx, load)
	if err != nil || first == nil {
		return err
	}
	lo, hi := (*SLOProbe)(nil), (*SLOProbe)(nil)
	if first.Pass {
		lo = first
		s.res.Answer = lo
		for hi == nil {
			next := s.valid(lo.Load * 2)
			if limit > 0 && next > limit {
				next = limit
			}
			if next <= lo.Load {
				s.res.Stop = limitedBy // at the cap and passing
				return nil
			}
			p, err := s.probe(ctx, next)
			if err != nil || p == nil {
				return err
			}
			if !p.Pass {
				hi = p
				break
			}
			if stop := flatThroughput(&lo.Metrics, &p.Metrics); stop != "" {
				s.res.Stop, s.res.Answer = stop, p
				s.res.Saturated = stop == StopSaturated
				what := "saturated"
				if stop == StopLoadFlat {
					what = "the load stopped growing"
				}
				fmt.Fprintf(s.stdout, "%s: throughput %.2f → %.2f req/s while median E2EL %.2f → %.2f ms; stopping\n",
					what, lo.Metrics.RequestThroughput, p.Metrics.RequestThroughput, lo.Metrics.E2ELP50, p.Metrics.E2ELP50)
				return nil
			}
			lo = p
			s.res.Answer = lo
		}
	} else {
		hi = first
		for lo == nil {
			next := s.valid(hi.Load / 2)
			if next >= hi.Load || next < s.o.Start/1024 {
				return nil // nothing passes
			}
			p, err := s.probe(ctx, next)
			if err != nil || p == nil {
				return err
			}
			if p.Pass {
				lo = p
			} else {
				hi = p
			}
		}
	}
	s.res.Answer, s.res.FailedAt = lo, hi.Load
	for (hi.Load-lo.Load)/hi.Load > s.o.Tolerance {
		mid := s.valid((lo.Load + hi.Load) / 2)
		if mid <= lo.Load || mid >= hi.Load {
			break
		}
		p, err := s.probe(ctx, mid)
		if err != nil || p == nil {
			return err
		}
		if p.Pass {
			lo = p
		} else {
			hi = p
		}
		s.res.Answer, s.res.FailedAt = lo, hi.Load
	}
	return nil
}

// flatThroughput reads probe a and the higher-load probe b: with
// throughput flat (< 5 % more), StopSaturated when the median E2EL grew by
// 10 % or more (more load only queues), else StopLoadFlat (more of the flag
// did not reach the server); "" when throughput grew.
func flatThroughput(a, b *report.PointMetrics) string {
	switch {
	case b.RequestThroughput >= 1.05*a.RequestThroughput:
		return ""
	case b.E2ELP50 >= 1.1*a.E2ELP50:
		return StopSaturated
	}
	return StopLoadFlat
}

// loadText is a load as the flag takes it: never an exponent, which
// --max-concurrency, an int, would refuse ("1.048576e+06").
func loadText(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// probe measures load and prints its line; nil without error when an
// interrupt cut it short.
func (s *sloSearch) probe(ctx context.Context, load float64) (*SLOProbe, error) {
	if ctx.Err() != nil {
		return nil, nil
	}
	m, file, err := s.measure(ctx, load)
	if err != nil || m == nil {
		return nil, err
	}
	pm := *m
	p := &SLOProbe{Load: load, Attainment: math.NaN(), Metrics: pm, File: file}
	if pm.Attainment != nil {
		p.Attainment = *pm.Attainment
	}
	p.Pass = p.Attainment >= s.o.Attainment
	s.res.Probes = append(s.res.Probes, *p)
	verdict := "fail"
	if p.Pass {
		verdict = "pass"
	}
	fmt.Fprintf(s.stdout, "probe %d: %s=%-8s attainment %6.2f%%  %s  req/s %.2f  TTFT p99 %.2f ms  TPOT p99 %.2f ms  E2EL p99 %.2f ms\n",
		len(s.res.Probes), s.o.Over, loadText(load), 100*p.Attainment, verdict,
		pm.RequestThroughput, pm.TTFTP99, pm.TPOTP99, pm.E2ELP99)
	return p, nil
}

// run is a probe's run: the serve flags with the load flag set.
func (s *sloSearch) run(ctx context.Context, load float64) (*report.PointMetrics, string, error) {
	args := append(append([]string(nil), s.o.Args...), "--"+s.o.Over, loadText(load))
	file := ""
	if s.base.SaveResult {
		file = "slo-" + s.o.Over + "=" + loadText(load) + ".json"
		args = append(args, "--result-filename", file)
		file = py.PathJoin(s.dir(), file)
	}
	cfg, err := cli.Parse(args, backend.Choices())
	if err != nil {
		return nil, "", err
	}
	fmt.Fprintf(s.stderr, "slo: probing %s=%s\n", s.o.Over, loadText(load))
	out, err := s.o.Run(ctx, cfg, s.stderr, s.stderr)
	if err != nil || out == nil || out.Cancelled || ctx.Err() != nil {
		return nil, "", err
	}
	pm, err := out.Point()
	if err != nil {
		return nil, "", err
	}
	return &pm, file, nil
}

// writeAnswer prints the answer and a table of the probes by load.
func (s *sloSearch) writeAnswer() {
	bw := bufio.NewWriter(s.stdout)
	defer bw.Flush()
	fmt.Fprintln(bw, py.FormatCenter(" SLO Capacity ", '=', pyout.BlockWidth))
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	a := s.res.Answer
	switch {
	case a == nil:
		fmt.Fprintf(tw, "No %s probed meets the SLOs\t(lowest tried: %s)\n", s.o.Over, loadText(s.lowest()))
	default:
		fmt.Fprintf(tw, "Highest %s meeting the SLOs:\t%s\n", s.o.Over, loadText(a.Load))
		fmt.Fprintf(tw, "Measured attainment:\t%.2f%%\n", 100*a.Attainment)
		fmt.Fprintf(tw, "Request throughput (req/s):\t%.2f\n", a.Metrics.RequestThroughput)
		if s.res.FailedAt > 0 {
			fmt.Fprintf(tw, "Lowest failing %s:\t%s\n", s.o.Over, loadText(s.res.FailedAt))
		}
		if s.res.Saturated {
			fmt.Fprintf(tw, "Limited by:\tserver capacity (throughput flat while latency grows)\n")
		}
	}
	tw.Flush()
	if why := s.everyProbePassed(); why != "" {
		fmt.Fprintln(bw, why)
	}
	fmt.Fprintln(bw, strings.Repeat("=", pyout.BlockWidth))
}

// everyProbePassed explains an answer no failing probe bounds: the SLOs
// held at every load tried, so the answer is where the search stopped, not
// where the SLOs break. "" when a probe failed above the answer.
func (s *sloSearch) everyProbePassed() string {
	a := s.res.Answer
	if a == nil || s.res.FailedAt > 0 || s.res.Saturated {
		return ""
	}
	load := loadText(a.Load)
	switch s.res.Stop {
	case StopNumPrompts:
		return fmt.Sprintf("Every probe met the SLOs: at max-concurrency %s = --num-prompts every request is in flight at once, "+
			"so no higher concurrency exists for this run; give more --num-prompts to search beyond it.", load)
	case StopSLOMax:
		return fmt.Sprintf("Every probe met the SLOs, up to --slo-max %s: raise --slo-max to search beyond it.", load)
	case StopLoadFlat:
		return fmt.Sprintf("Every probe met the SLOs: past %s=%s more of it did not reach the server (throughput and latency held), "+
			"so the SLOs did not break within the load this run can offer; more --num-prompts (or a higher --request-rate for "+
			"a concurrency search) offer more.", s.o.Over, load)
	}
	return ""
}

func (s *sloSearch) lowest() float64 {
	low := math.Inf(1)
	for _, p := range s.res.Probes {
		low = math.Min(low, p.Load)
	}
	return low
}
