package cli

import (
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/internal/py"
)

// The Rust client's options (RustFlags) act only when given, so a Python
// command line plans the run Python would. Those that are another
// spelling of something stampede has are rewritten into it here; the
// commands (--compare, --dry-run, the sweeps, --multi-turn) are
// dispatched by cmd/stampede from the plan; the rest act inside the run.

// applyRust checks the Rust client's options and rewrites those with a
// stampede equivalent into it.
func (c *draft) applyRust() error {
	r := &c.RustClient
	if r.NumRuns < 1 {
		return py.UsageErrorf("argument --num-runs: invalid value %q: a whole number of runs, 1 or more", strconv.Itoa(r.NumRuns))
	}
	if c.Given("compare") && len(r.Compare) != 2 {
		return py.UsageErrorf("argument --compare: expected 2 arguments (A.json B.json), got %d; stampede compare takes more", len(r.Compare))
	}
	if err := c.applyRustOutputJSON(); err != nil {
		return err
	}
	if err := c.applyRustSteadyState(); err != nil {
		return err
	}
	if err := c.checkRustSweep(); err != nil {
		return err
	}
	if err := c.applyRustSummaryPercentiles(); err != nil {
		return err
	}
	if c.Given("speed-bench-config") {
		if c.Given("speed-bench-dataset-subset") && c.SpeedBenchDatasetSubset != r.SpeedBenchConfig {
			return py.UsageErrorf("--speed-bench-config %s and --speed-bench-dataset-subset %s name different subsets: give one",
				r.SpeedBenchConfig, c.SpeedBenchDatasetSubset)
		}
		c.SpeedBenchDatasetSubset = r.SpeedBenchConfig
	}
	if err := c.checkRustMultiTurn(); err != nil {
		return err
	}
	if err := c.checkRustProfile(); err != nil {
		return err
	}
	if n := r.SpeedBenchMaxInputLen; n != nil {
		switch {
		case *n < 1:
			return py.UsageErrorf("argument --speed-bench-max-input-len: invalid value %d: a whole number of tokens, 1 or more", *n)
		case c.DatasetName != "speed_bench":
			return py.UsageErrorf("--speed-bench-max-input-len cuts SPEED-Bench's prompts: it needs --dataset-name speed_bench, not %s", c.DatasetName)
		}
	}
	if c.Given("hf-text-column") {
		switch {
		case r.HFTextColumn == "":
			return py.UsageErrorf("argument --hf-text-column: invalid value '': the name of the column holding the prompt text")
		case c.DatasetName != "hf":
			return py.UsageErrorf("--hf-text-column names a Hugging Face dataset's prompt column: it needs --dataset-name hf, not %s", c.DatasetName)
		}
	}
	if r.PromptTokenIDs {
		switch {
		case c.DatasetName != "random":
			return py.UsageErrorf("--prompt-token-ids sends the random dataset's prompts as token ids: it needs --dataset-name random, not %s", c.DatasetName)
		case c.Backend != "vllm" && c.Backend != "openai":
			return py.UsageErrorf("--prompt-token-ids sends prompts as the completions API's token-id lists: it needs --backend vllm or openai, not %s", c.Backend)
		case c.RandomBatchSize > 1:
			return py.UsageErrorf("--prompt-token-ids sends one prompt per request: it cannot be combined with --random-batch-size %d", c.RandomBatchSize)
		case c.SkipTokenizerInit:
			return py.UsageErrorf("--prompt-token-ids needs a tokenizer: drop --skip-tokenizer-init")
		}
	}
	if r.DryRun {
		for _, other := range []string{"compare", "sweep-max-concurrency", "sweep-request-rate"} {
			if c.Given(other) {
				return py.UsageErrorf("--dry-run sends nothing: it cannot be combined with --%s", other)
			}
		}
	}
	return nil
}

// multiTurnOptions are the options that shape --multi-turn's
// conversations.
var multiTurnOptions = []string{"multi-turn-num-turns", "multi-turn-min-turns", "multi-turn-max-turns",
	"multi-turn-concurrency", "multi-turn-delay-ms", "per-turn-input-len",
	"multi-turn-prefix-global-ratio", "multi-turn-prefix-conversation-ratio"}

// checkRustMultiTurn checks --multi-turn and its options: each needs it,
// numbers in range, chat completions, and a dataset it can make
// conversations of.
func (c *draft) checkRustMultiTurn() error {
	r := &c.RustClient
	if !r.MultiTurn {
		for _, name := range multiTurnOptions {
			if c.Given(name) {
				return py.UsageErrorf("--%s shapes --multi-turn's conversations: give --multi-turn", name)
			}
		}
		return nil
	}
	for _, n := range []struct {
		flag  string
		v, lo int
		what  string
	}{
		{"multi-turn-num-turns", r.MultiTurnNumTurns, 1, "a whole number of turns, 1 or more"},
		{"multi-turn-min-turns", r.MultiTurnMinTurns, 0, "a whole number of turns, 0 or more (0: --multi-turn-num-turns)"},
		{"multi-turn-max-turns", r.MultiTurnMaxTurns, 0, "a whole number of turns, 0 or more (0: --multi-turn-num-turns)"},
		{"multi-turn-delay-ms", r.MultiTurnDelayMs, 0, "milliseconds, 0 or more"},
		{"per-turn-input-len", r.PerTurnInputLen, 0, "a whole number of tokens, 0 or more (0: --random-input-len)"},
	} {
		if n.v < n.lo {
			return py.UsageErrorf("argument --%s: invalid value %d: %s", n.flag, n.v, n.what)
		}
	}
	if p := r.MultiTurnConcurrency; p != nil && *p < 1 {
		return py.UsageErrorf("argument --multi-turn-concurrency: invalid value %d: a whole number of conversations, 1 or more", *p)
	}
	if lo, hi := r.MultiTurnMinTurns, r.MultiTurnMaxTurns; lo > 0 && hi > 0 && lo > hi {
		return py.UsageErrorf("--multi-turn-min-turns %d is more than --multi-turn-max-turns %d", lo, hi)
	}
	g, k := r.MultiTurnPrefixGlobalRatio, r.MultiTurnPrefixConversationRatio
	for _, x := range []struct {
		flag string
		v    float64
	}{{"multi-turn-prefix-global-ratio", g}, {"multi-turn-prefix-conversation-ratio", k}} {
		if !(x.v >= 0 && x.v < 1) {
			return py.UsageErrorf("argument --%s: invalid value %s: a fraction of each turn's input, at least 0 and below 1", x.flag, strconv.FormatFloat(x.v, 'g', -1, 64))
		}
	}
	if !(g+k < 1) {
		return py.UsageErrorf("--multi-turn-prefix-global-ratio %s and --multi-turn-prefix-conversation-ratio %s must sum to less than 1: each turn keeps a part of its own",
			strconv.FormatFloat(g, 'g', -1, 64), strconv.FormatFloat(k, 'g', -1, 64))
	}
	switch {
	case c.Backend != "openai-chat":
		return py.UsageErrorf("--multi-turn sends each conversation's history as chat messages: it needs --backend openai-chat, not %s", c.Backend)
	case c.DatasetName != "random" && c.DatasetName != "sharegpt":
		return py.UsageErrorf("--multi-turn makes conversations of --dataset-name random (synthetic turns) or sharegpt (the file's own), not %s", c.DatasetName)
	case c.DatasetName == "sharegpt" && c.DatasetPath == "":
		return py.UsageErrorf("--multi-turn with --dataset-name sharegpt reads its conversations from --dataset-path (stampede downloads none): give the ShareGPT JSON file")
	case c.DatasetName != "random" && (g > 0 || k > 0):
		return py.UsageErrorf("--multi-turn-prefix-global-ratio and --multi-turn-prefix-conversation-ratio shape synthetic turns: they need --dataset-name random, not %s", c.DatasetName)
	}
	for _, other := range []string{"sweep-max-concurrency", "sweep-request-rate", "dry-run", "compare", "profile"} {
		if c.Given(other) {
			return py.UsageErrorf("--multi-turn runs its own conversation benchmark: it cannot be combined with --%s", other)
		}
	}
	if r.NumRuns > 1 {
		return py.UsageErrorf("--multi-turn runs its own conversation benchmark: it cannot be combined with --num-runs %d", r.NumRuns)
	}
	if !c.Given("endpoint") {
		// The Rust client picks the endpoint by backend; Python's default
		// is the completions API's.
		c.Endpoint = "/v1/chat/completions"
	}
	return nil
}

// checkRustProfile checks deferred profiling: --profile-batch-threshold
// needs --profile, --profile-duration needs the threshold.
func (c *draft) checkRustProfile() error {
	r := &c.RustClient
	if n := r.ProfileBatchThreshold; n != nil {
		switch {
		case *n < 1:
			return py.UsageErrorf("argument --profile-batch-threshold: invalid value %d: a whole number of running requests, 1 or more", *n)
		case !c.Profile:
			return py.UsageErrorf("--profile-batch-threshold defers --profile's start until the server's batch is full: give --profile")
		}
	}
	if c.Given("profile-duration") {
		d := r.ProfileDuration
		switch {
		case !(d > 0) || math.IsInf(d, 1):
			return py.UsageErrorf("argument --profile-duration: invalid value %s: seconds, greater than 0", strconv.FormatFloat(d, 'g', -1, 64))
		case r.ProfileBatchThreshold == nil:
			return py.UsageErrorf("--profile-duration is how long a deferred profile runs: give --profile-batch-threshold (without it, --profile covers the whole run)")
		}
	}
	return nil
}

// applyRustOutputJSON makes --output-json PATH the result file: saved,
// at that path.
func (c *draft) applyRustOutputJSON() error {
	path := c.OutputJSON
	if path == "" {
		return nil
	}
	for _, other := range []string{"result-dir", "result-filename"} {
		if c.Given(other) {
			return py.UsageErrorf("--output-json names the result file's path: it cannot be combined with --%s", other)
		}
	}
	c.SaveResult = true
	if dir := filepath.Dir(path); dir != "." {
		c.ResultDir = dir
	}
	c.ResultFilename = filepath.Base(path)
	return nil
}

// applyRustSteadyState maps the Rust client's steady-state options onto
// --steady-state (--steady-state-threshold and --steady-state-min-window,
// given, print its block). The Rust client prints its block by default; stampede,
// Python's drop-in, only when asked, so --no-steady-state has nothing to
// turn off unless --steady-state or --steady-state-threshold is given too,
// and then it wins.
func (c *draft) applyRustSteadyState() error {
	if c.Given("steady-state-threshold") {
		th := c.SteadyStateThreshold
		if !(th > 0 && th <= 1) {
			return py.UsageErrorf("argument --steady-state-threshold: invalid value %s: a fraction of --max-concurrency, greater than 0 and at most 1",
				strconv.FormatFloat(th, 'g', -1, 64))
		}
		c.SteadyState = true
	}
	if w := c.SteadyStateMinWindow; w != nil {
		if !(*w > 0) || math.IsInf(*w, 1) {
			return py.UsageErrorf("argument --steady-state-min-window: invalid value %s: seconds, greater than 0",
				strconv.FormatFloat(*w, 'g', -1, 64))
		}
		c.SteadyState = true
	}
	if c.NoSteadyState {
		c.SteadyState = false
	}
	return nil
}

// checkRustSweep checks the sweep lists and the options that only make
// sense with them.
func (c *draft) checkRustSweep() error {
	r := &c.RustClient
	if c.Given("sweep-max-concurrency") {
		values, err := SweepValues("sweep-max-concurrency", r.SweepMaxConcurrency)
		if err != nil {
			return err
		}
		for _, v := range values {
			if n, err := strconv.Atoi(v); err != nil || n < 1 {
				return py.UsageErrorf("argument --sweep-max-concurrency: invalid value %q: want whole numbers greater than 0, such as 1,10,50", v)
			}
		}
	}
	if c.Given("sweep-request-rate") {
		values, err := SweepValues("sweep-request-rate", r.SweepRequestRate)
		if err != nil {
			return err
		}
		for _, v := range values {
			if f, err := py.ParseFloat(v); err != nil || !(f > 0) || math.IsNaN(f) {
				return py.UsageErrorf("argument --sweep-request-rate: invalid value %q: want rates greater than 0 or inf, such as 1,10,inf", v)
			}
		}
	}
	if r.SweepNumPromptsFactor != nil {
		if !c.Given("sweep-max-concurrency") {
			return py.UsageErrorf("--sweep-num-prompts-factor sets --num-prompts per --sweep-max-concurrency point: give --sweep-max-concurrency")
		}
		if *r.SweepNumPromptsFactor < 1 {
			return py.UsageErrorf("argument --sweep-num-prompts-factor: invalid value %d: want a whole number greater than 0", *r.SweepNumPromptsFactor)
		}
	}
	return nil
}

// applyRustSummaryPercentiles reads --sweep-summary-percentiles: the
// sweep's table gets a column per percentile, and the percentiles join
// the computed set (SelectedPercentiles), so each point's result JSON has
// them too.
func (c *draft) applyRustSummaryPercentiles() error {
	if !c.Given("sweep-summary-percentiles") {
		return nil
	}
	if !RustSweep(c.Plan) {
		return py.UsageErrorf("--sweep-summary-percentiles adds columns to a sweep's summary: give --sweep-max-concurrency or --sweep-request-rate")
	}
	values, err := SweepValues("sweep-summary-percentiles", c.SweepSummaryPercentiles)
	if err != nil {
		return err
	}
	for _, v := range values {
		p, err := py.ParseFloat(v)
		if err != nil || !(p > 0 && p < 100) {
			return py.UsageErrorf("argument --sweep-summary-percentiles: invalid value %q: want percentiles between 0 and 100, such as 50,90,99", v)
		}
		c.SummaryPercentiles = withPercentiles(c.SummaryPercentiles, []float64{p})
	}
	return nil
}

// withPercentiles is have followed by the values of more it lacks.
func withPercentiles(have, more []float64) []float64 {
	for _, p := range more {
		if !slices.Contains(have, p) {
			have = append(have, p)
		}
	}
	return have
}

// RustSweepMetricPercentiles is the --metric-percentiles value of a Rust
// sweep's points: the plan's computed set, --sweep-summary-percentiles
// included, so that a point's result JSON holds its summary's columns.
func RustSweepMetricPercentiles(p *plan.Plan) string {
	parts := make([]string, len(p.SelectedPercentiles))
	for i, v := range p.SelectedPercentiles {
		parts[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

// SweepValues splits a --sweep-max-concurrency or --sweep-request-rate
// list.
func SweepValues(flag, list string) ([]string, error) {
	var out []string
	for _, v := range strings.Split(list, ",") {
		if v = strings.TrimSpace(v); v == "" {
			return nil, py.UsageErrorf("argument --%s: invalid value %q: an empty value; want comma-separated values", flag, list)
		}
		out = append(out, v)
	}
	return out, nil
}

// RustSweep reports whether the plan asks for a sweep the Rust client's
// way (--sweep-max-concurrency, --sweep-request-rate).
func RustSweep(p *plan.Plan) bool {
	return p.Given("sweep-max-concurrency") || p.Given("sweep-request-rate")
}

// rustCommandFlags are the Rust client's options that turn a run into
// another command, with their number of values.
var rustCommandFlags = []string{"sweep-max-concurrency", "sweep-request-rate", "sweep-num-prompts-factor", "sweep-summary-percentiles", "reset-prefix-cache", "num-runs"}

// WithoutRustCommandFlags is args without the Rust client's sweep and
// repeat options (in any spelling argparse accepts), so the sweep's
// points can be parsed again as plain runs.
func WithoutRustCommandFlags(args []string) ([]string, error) {
	var f Flags
	table := newActionTable(newFlagParser(&f, nil))
	var out []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			return append(out, args[i:]...), nil
		}
		probe := arg
		if strings.HasPrefix(arg, "--") {
			if k, v, ok := strings.Cut(arg, "="); ok {
				probe = dashName(k) + "=" + v
			} else {
				probe = dashName(arg)
			}
		}
		m, err := table.matchOption(probe)
		if err != nil {
			return nil, err
		}
		if m == nil || m.action == nil || !contains(rustCommandFlags, m.action.flag.LongName) {
			out = append(out, arg)
			continue
		}
		if m.explicit == nil && m.action.nargs == nargsOne {
			i++ // its value
		}
	}
	return out, nil
}

// rustCommands are the Rust client's options that make the command line
// another command: only stampede without a subcommand runs them.
var rustCommands = []string{"compare", "dry-run", "sweep-max-concurrency", "sweep-request-rate", "sweep-num-prompts-factor", "sweep-summary-percentiles", "reset-prefix-cache"}

// RefuseRustOptions is the usage error of a subcommand whose serve options
// hold one of the Rust client's options it would ignore: the commands
// (--compare, --dry-run, the sweeps, --reset-prefix-cache) always, and with
// all true any of them, for a subcommand that samples no dataset of serve's.
// sub names the subcommand ("sweep").
func RefuseRustOptions(p *plan.Plan, sub string, all bool) error {
	names := rustCommands
	if all {
		names = nil
		var f Flags
		for _, o := range newFlagParser(&f, nil).Groups()[0].Groups() {
			if o.ShortDescription == "vllm-bench (Rust client) options" {
				for _, opt := range o.Options() {
					names = append(names, opt.LongName)
				}
			}
		}
	}
	for _, name := range names {
		if p.Given(name) {
			return py.UsageErrorf("--%s is an option of the Rust client's command line, which stampede runs without a subcommand; stampede %s does not take it", name, sub)
		}
	}
	return nil
}
