package multiturn

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/internal/py"
	"github.com/stampede-bench/stampede/metrics"
)

// percentiles reported for every metric, overall and per turn.
var percentiles = []float64{50, 90, 99}

// Stats is one metric's summary in milliseconds.
type Stats struct {
	Mean   float64 `json:"mean_ms"`
	Median float64 `json:"median_ms"`
	Std    float64 `json:"std_ms"`
	P50    float64 `json:"p50_ms"`
	P90    float64 `json:"p90_ms"`
	P99    float64 `json:"p99_ms"`
	Count  int     `json:"count"`
}

// Metrics are the four latency metrics of a group of requests.
type Metrics struct {
	TTFT Stats `json:"ttft"`
	TPOT Stats `json:"tpot"`
	ITL  Stats `json:"itl"`
	E2EL Stats `json:"e2el"`
}

// TurnStats are the requests of one turn index over all conversations:
// with a prefix cache, TTFT falls as the turn index (and the cached
// history) grows.
type TurnStats struct {
	Turn             int     `json:"turn"` // 1-based
	Successful       int     `json:"successful"`
	Failed           int     `json:"failed"`
	MeanInputTokens  float64 `json:"mean_input_tokens"`
	MeanOutputTokens float64 `json:"mean_output_tokens"`
	Metrics
}

// Row is one request, for --save-detailed and --stats-json-output.
type Row struct {
	ConversationID string    `json:"conversation_id"`
	Turn           int       `json:"turn"` // 1-based
	Client         int       `json:"client_id"`
	Success        bool      `json:"success"`
	Error          string    `json:"error,omitempty"`
	StartSec       float64   `json:"start_time_sec"`
	TTFTMs         float64   `json:"ttft_ms"`
	TPOTMs         float64   `json:"tpot_ms"`
	E2ELMs         float64   `json:"latency_ms"`
	InputTokens    int       `json:"input_num_tokens"`
	OutputTokens   int       `json:"output_num_tokens"`
	ITLsMs         []float64 `json:"itls_ms"`
}

// Report is the result JSON of a multiturn run.
type Report struct {
	Date                   string  `json:"date"`
	Model                  string  `json:"model"`
	InputFile              string  `json:"input_file"`
	NumClients             int     `json:"num_clients"`
	MaxActiveConversations int     `json:"max_active_conversations"`
	Seed                   int     `json:"seed"`
	History                string  `json:"history"`
	Conversations          int     `json:"num_conversations"`
	CompletedConversations int     `json:"completed_conversations"`
	Requests               int     `json:"num_requests"`
	Completed              int     `json:"completed"`
	Failed                 int     `json:"failed"`
	Interrupted            bool    `json:"interrupted"`
	DurationSec            float64 `json:"duration"`
	TotalInputTokens       int     `json:"total_input_tokens"`
	TotalOutputTokens      int     `json:"total_output_tokens"`
	RequestThroughput      float64 `json:"request_throughput"`
	OutputThroughput       float64 `json:"output_throughput"`
	Metrics
	PerTurn []TurnStats `json:"per_turn"`
	Rows    []Row       `json:"requests,omitempty"`
}

// BuildReport summarises an outcome. Rows are always built (the
// per-request files need them); Save drops them without --save-detailed.
func BuildReport(opts *Options, plan *Plan, out *Outcome, now time.Time) *Report {
	res := out.Result
	r := &Report{
		Date: now.Format("20060102-150405"), Model: plan.Model, InputFile: opts.InputFile,
		NumClients: opts.NumClients, MaxActiveConversations: opts.MaxActiveConversations,
		Seed: opts.Serve.Seed, History: opts.History,
		Conversations: len(plan.Conversations), CompletedConversations: out.Completed,
		Requests: len(out.Turns), Interrupted: res.Cancelled,
		DurationSec: metrics.Seconds(res.Data.DurationNs),
	}
	type group struct {
		ttft, tpot, itl, e2el []float64
		in, out, ok, failed   int
	}
	var all group
	var turns []group
	for i, rr := range res.Data.Log.All() {
		if i >= len(out.Turns) {
			break
		}
		t := out.Turns[i]
		for len(turns) <= t.Index {
			turns = append(turns, group{})
		}
		row := Row{
			ConversationID: plan.Conversations[t.Conversation].ID, Turn: t.Index + 1, Client: t.Client,
			Success: rr.Success, Error: rr.Error, StartSec: metrics.Seconds(rr.StartNs - res.ScheduleStartNs),
			InputTokens: rr.PromptLen, OutputTokens: rr.OutputTokens, ITLsMs: []float64{},
		}
		g := &turns[t.Index]
		if !rr.Success {
			g.failed++
			all.failed++
			r.Rows = append(r.Rows, row)
			continue
		}
		row.TTFTMs, row.E2ELMs = ms(rr.TTFTNs), ms(rr.LatencyNs)
		ttft, e2el := metrics.Seconds(rr.TTFTNs), metrics.Seconds(rr.LatencyNs)
		for _, grp := range []*group{g, &all} {
			grp.ok++
			grp.in += rr.PromptLen
			grp.out += rr.OutputTokens
			grp.ttft = append(grp.ttft, ttft)
			grp.e2el = append(grp.e2el, e2el)
		}
		if rr.OutputTokens > 1 {
			tpot := (e2el - ttft) / float64(rr.OutputTokens-1)
			row.TPOTMs = tpot * 1000
			g.tpot = append(g.tpot, tpot)
			all.tpot = append(all.tpot, tpot)
		}
		for gap := range rr.ITLs() {
			row.ITLsMs = append(row.ITLsMs, ms(gap))
			g.itl = append(g.itl, metrics.Seconds(gap))
			all.itl = append(all.itl, metrics.Seconds(gap))
		}
		r.Rows = append(r.Rows, row)
	}
	summarise := func(g *group) Metrics {
		return Metrics{TTFT: stats(g.ttft), TPOT: stats(g.tpot), ITL: stats(g.itl), E2EL: stats(g.e2el)}
	}
	r.Completed, r.Failed = all.ok, all.failed
	r.TotalInputTokens, r.TotalOutputTokens = all.in, all.out
	if r.DurationSec > 0 {
		r.RequestThroughput = float64(all.ok) / r.DurationSec
		r.OutputThroughput = float64(all.out) / r.DurationSec
	}
	r.Metrics = summarise(&all)
	for k := range turns {
		g := &turns[k]
		ts := TurnStats{Turn: k + 1, Successful: g.ok, Failed: g.failed, Metrics: summarise(g)}
		if g.ok > 0 {
			ts.MeanInputTokens = float64(g.in) / float64(g.ok)
			ts.MeanOutputTokens = float64(g.out) / float64(g.ok)
		}
		r.PerTurn = append(r.PerTurn, ts)
	}
	return r
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

func stats(sec []float64) Stats {
	if len(sec) == 0 {
		return Stats{}
	}
	s := metrics.Summarize(sec, percentiles)
	return Stats{Mean: s.MeanMs, Median: s.MedianMs, Std: s.StdMs,
		P50: s.Percentiles[0].ValueMs, P90: s.Percentiles[1].ValueMs, P99: s.Percentiles[2].ValueMs, Count: len(sec)}
}

// Print writes the result block: the run's figures, the four metrics
// overall, then TTFT, TPOT and E2EL by turn index.
func (r *Report) Print(w io.Writer) {
	line := func(label string, v any) {
		switch v := v.(type) {
		case float64:
			fmt.Fprintf(w, "%-40s %-10.2f\n", label, v)
		default:
			fmt.Fprintf(w, "%-40s %-10v\n", label, v)
		}
	}
	fmt.Fprintln(w, py.FormatCenter(" Multi-turn Serving Benchmark Result ", '=', 60))
	line("Conversations:", r.Conversations)
	line("Completed conversations:", r.CompletedConversations)
	line("Clients:", r.NumClients)
	line("Max active conversations:", r.MaxActiveConversations)
	line("Successful requests:", r.Completed)
	line("Failed requests:", r.Failed)
	line("Benchmark duration (s):", r.DurationSec)
	line("Total input tokens:", r.TotalInputTokens)
	line("Total generated tokens:", r.TotalOutputTokens)
	line("Request throughput (req/s):", r.RequestThroughput)
	line("Output token throughput (tok/s):", r.OutputThroughput)
	for _, m := range []struct {
		name, title string
		s           Stats
	}{
		{"TTFT", "Time to First Token", r.TTFT}, {"TPOT", "Time per Output Token (excl. 1st token)", r.TPOT},
		{"ITL", "Inter-token Latency", r.ITL}, {"E2EL", "End-to-end Latency", r.E2EL},
	} {
		fmt.Fprintln(w, py.FormatCenter(m.title, '-', 60))
		line(fmt.Sprintf("Mean %s (ms):", m.name), m.s.Mean)
		line(fmt.Sprintf("Median %s (ms):", m.name), m.s.Median)
		line(fmt.Sprintf("P90 %s (ms):", m.name), m.s.P90)
		line(fmt.Sprintf("P99 %s (ms):", m.name), m.s.P99)
	}
	fmt.Fprintln(w, py.FormatCenter("By turn (ms)", '-', 60))
	fmt.Fprintf(w, "%4s %5s %4s %7s %8s %8s %8s %8s %8s %8s\n", "turn", "ok", "fail", "in_tok", "TTFT p50", "TTFT p90", "TTFT p99", "TPOT p50", "E2EL p50", "E2EL p99")
	for _, t := range r.PerTurn {
		fmt.Fprintf(w, "%4d %5d %4d %7.0f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f\n", t.Turn, t.Successful, t.Failed, t.MeanInputTokens,
			t.TTFT.P50, t.TTFT.P90, t.TTFT.P99, t.TPOT.P50, t.E2EL.P50, t.E2EL.P99)
	}
	fmt.Fprintln(w, strings.Repeat("=", 60))
}

// ResultPath is where --save-result writes: --result-filename, else
// multiturn-<model>-<date>.json, in --result-dir.
func (r *Report) ResultPath(opts *Options) string {
	name := opts.Serve.ResultFilename
	if name == "" {
		model := r.Model
		if i := strings.LastIndexByte(model, '/'); i >= 0 {
			model = model[i+1:]
		}
		name = fmt.Sprintf("multiturn-%s-%s.json", model, r.Date)
	}
	if opts.Serve.ResultDir != "" {
		name = filepath.Join(opts.Serve.ResultDir, name)
	}
	return name
}

// Save writes what the options ask for: the result JSON (--save-result,
// rows only with --save-detailed), the per-request rows
// (--stats-json-output) and the answered conversations (--output-file).
func (r *Report) Save(opts *Options, out *Outcome) ([]string, error) {
	var saved []string
	write := func(path string, v any) error {
		if dir := filepath.Dir(path); dir != "." {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
			return err
		}
		saved = append(saved, path)
		return nil
	}
	if opts.Serve.SaveResult {
		res := *r
		if !opts.Serve.SaveDetailed {
			res.Rows = nil
		}
		if err := write(r.ResultPath(opts), &res); err != nil {
			return saved, fmt.Errorf("--save-result: %w", err)
		}
	}
	if opts.StatsJSONOutput != "" {
		rows := r.Rows
		if rows == nil {
			rows = []Row{}
		}
		if err := write(opts.StatsJSONOutput, rows); err != nil {
			return saved, fmt.Errorf("--stats-json-output: %w", err)
		}
	}
	if opts.OutputFile != "" {
		if err := write(opts.OutputFile, out.Answered); err != nil {
			return saved, fmt.Errorf("--output-file: %w", err)
		}
	}
	return saved, nil
}
