package search

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/stampede-bench/stampede/bench/backend"
	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/internal/py"
)

// `stampede rerun FILE`: the command line kept in FILE's sidecar
// (report.Manifest) run again, then compared with FILE. The new result
// goes beside FILE as <FILE without .json>.rerun.json (with --num-runs,
// .rerun.runK.json each), so the original is never overwritten.
//
// The sidecar is a file like any other: whoever handed it over may have
// written its command line. So a rerun trusts nothing in it that reaches
// beyond the rerun itself (PlanRerun):
//
//   - it writes only inside its own directory, FILE's: the result's name
//     is the rerun's own; a manifest's --save-partial or --report there
//     is written as its .rerun copy beside it (r.html → r.rerun.html,
//     so the original's files stay), and one that points elsewhere, or
//     through a symbolic link, is refused;
//   - it sends only where the original run sent (the manifest's targets,
//     recorded apart from its command line) or where the user names on the
//     rerun's own command line (--base-url, or a URL after "--"); a
//     command line that sends elsewhere is refused, --yes or not;
//   - a credential the user supplies (a secret given again after "--",
//     $OPENAI_API_KEY) goes only to servers the user named: with one, every
//     server the run sends to must be named;
//   - what it will run (the servers, the files read and written, the
//     options changed from the manifest's) is shown before anything is
//     sent, and the command asks for confirmation unless --yes.

// rerunOutputOptions are the options that name the result's file: the
// rerun sets its own, and refuses them after "--".
var rerunOutputOptions = []string{"result-dir", "result-filename", "output-json"}

// rerunURLOptions are the options whose values are servers: given after
// "--", they name those servers.
var rerunURLOptions = []string{"base-url", "server-urls", "server-metrics"}

// RerunPath is where the rerun of the result file resultPath saves.
func RerunPath(resultPath string) string {
	return strings.TrimSuffix(resultPath, ".json") + ".rerun.json"
}

// RerunArgv is the manifest's command line for a rerun of resultPath:
// its own output names dropped for RerunPath's, --base-url set when
// baseURL is given (it replaces --host and --port, as in vLLM), and extra
// (options given after the rerun's "--", such as a redacted secret) last;
// an option extra or the rerun sets is dropped from the manifest's line
// with its values, so that each is given once.
func RerunArgv(m *report.Manifest, resultPath, baseURL string, extra []string) []string {
	return rerunArgv(m, resultPath, baseURL, nil, extra)
}

// rerunArgv is RerunArgv with the options in set (name → value) given
// between the rerun's own output names and extra, replacing the
// manifest's.
func rerunArgv(m *report.Manifest, resultPath, baseURL string, set map[string]string, extra []string) []string {
	replaced := map[string]bool{}
	for _, name := range rerunOutputOptions {
		replaced[name] = true
	}
	for name := range set {
		replaced[name] = true
	}
	if baseURL != "" {
		replaced["base-url"] = true
	}
	for _, name := range optionNames(extra) {
		replaced[name] = true
	}
	var argv []string
	dropping := false // the values of a dropped option follow it
	for _, a := range m.Argv {
		if name, ok := strings.CutPrefix(a, "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			dropping = replaced[name]
		}
		if !dropping {
			argv = append(argv, a)
		}
	}
	if baseURL != "" {
		argv = append(argv, "--base-url", baseURL)
	}
	out := RerunPath(resultPath)
	argv = append(argv, "--result-dir", filepath.Dir(out), "--result-filename", filepath.Base(out))
	for _, name := range slices.Sorted(maps.Keys(set)) {
		argv = append(argv, "--"+name, set[name])
	}
	return append(argv, extra...)
}

// optionNames are the long options given in argv, without "--".
func optionNames(argv []string) []string {
	var out []string
	for _, a := range argv {
		if name, ok := strings.CutPrefix(a, "--"); ok && name != "" {
			name, _, _ = strings.Cut(name, "=")
			out = append(out, name)
		}
	}
	return out
}

// optionValues are the values given to the long option name in argv,
// each token after it up to the next option ("--name=v" too).
func optionValues(argv []string, name string) []string {
	var out []string
	in := false
	for _, a := range argv {
		if opt, ok := strings.CutPrefix(a, "--"); ok {
			opt, value, hasValue := strings.Cut(opt, "=")
			in = opt == name && !hasValue
			if opt == name && hasValue {
				out = append(out, value)
			}
			continue
		}
		if in {
			out = append(out, a)
		}
	}
	return out
}

// Redacted lists the options of argv whose values the manifest redacted.
func Redacted(argv []string) []string {
	var out []string
	option := ""
	for _, a := range argv {
		if name, ok := strings.CutPrefix(a, "--"); ok {
			option, _, _ = strings.Cut(name, "=")
		}
		if strings.Contains(a, "<redacted>") && !slices.Contains(out, "--"+option) {
			out = append(out, "--"+option)
		}
	}
	return out
}

// DataMismatch is a hash of the rerun's data that is not the original's.
type DataMismatch struct {
	What     string // "dataset" or "tokenizer"
	Original string // "" when the original recorded none
	Now      string // "" when it could not be hashed
	Problem  string // why not
}

func (d DataMismatch) String() string {
	now := d.Now
	if now == "" {
		now = "not hashed: " + d.Problem
	}
	if d.Original == "" {
		return fmt.Sprintf("the %s's SHA-256 was not recorded by the original run, is now %s", shown(d.What), now)
	}
	return fmt.Sprintf("the %s's SHA-256 was %s, is now %s", shown(d.What), d.Original, now)
}

// RerunOptions are what the user gave `stampede rerun` beside FILE: its
// own command line, the only one a rerun takes a server or a secret from.
type RerunOptions struct {
	// BaseURL is --base-url: the server to run against ("" for the
	// original's).
	BaseURL string
	// Extra are the serve options given after "--".
	Extra []string
	// Getenv reads the environment ($OPENAI_API_KEY); nil is os.Getenv.
	Getenv func(string) string
}

// RerunTarget is a server the rerun sends to.
type RerunTarget struct {
	Origin string
	// Named is set when the user named it on the rerun's command line;
	// Saved when the original run sent there.
	Named, Saved bool
}

// RerunFile is a file the rerun reads or writes.
type RerunFile struct {
	What string // "result", "sidecar", "dataset", "--report", ...
	Path string
	// Instead is the manifest's path the rerun writes Path in place of
	// ("" when it writes the file the options name).
	Instead string
}

// RerunPlan is what a rerun of a result file will run, as PlanRerun
// worked it out: shown to the user before anything is sent.
type RerunPlan struct {
	// Argv is serve's command line, Plan its parse.
	Argv []string
	Plan *plan.Plan
	// Targets are the servers it sends to; Saved the original run's.
	Targets []RerunTarget
	Saved   []string
	// Reads and Writes are the files it reads and writes.
	Reads, Writes []RerunFile
	// Removed and Added are the manifest's options the rerun drops and
	// the ones it gives instead (each an option with its values, secrets
	// redacted).
	Removed, Added []string
	// Credentials are the secrets the user supplies, redacted
	// ("$OPENAI_API_KEY", "--header Authorization=<redacted>").
	Credentials []string
	// Refusals are why the rerun must not run; none when it may.
	Refusals []string
}

// PlanRerun works out the rerun of resultPath from its manifest m and the
// user's options: the command line, and what it reaches beyond the rerun
// (servers, files), with the rules above. A usage error is the user's own
// (an option after "--" that names the result); anything the manifest
// asks that a rerun must not do is a Refusal, so the plan can still be
// shown.
func PlanRerun(m *report.Manifest, resultPath string, o RerunOptions) (*RerunPlan, error) {
	for _, name := range optionNames(o.Extra) {
		if slices.Contains(rerunOutputOptions, name) {
			return nil, py.UsageErrorf("--%s after \"--\": a rerun names its own result, %s, beside the original", name, RerunPath(resultPath))
		}
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	parse := func(argv []string) (*plan.Plan, error) { return cli.ParseEnv(argv, backend.Choices(), o.Getenv) }
	first, err := parse(rerunArgv(m, resultPath, o.BaseURL, nil, o.Extra))
	if err != nil {
		return nil, err
	}
	p := &RerunPlan{}
	dir := filepath.Dir(RerunPath(resultPath))
	set := map[string]string{}
	userGiven := optionNames(o.Extra)
	for _, w := range []struct{ option, path string }{{"save-partial", first.SavePartial}, {"report", first.Report}} {
		if w.path == "" || slices.Contains(userGiven, w.option) {
			continue
		}
		own, refusal := rerunCopy(dir, "--"+w.option, w.path)
		if refusal != "" {
			p.Refusals = append(p.Refusals, refusal)
			continue
		}
		set[w.option] = own
	}
	p.Argv = rerunArgv(m, resultPath, o.BaseURL, set, o.Extra)
	if p.Plan, err = parse(p.Argv); err != nil {
		return nil, err
	}
	p.files(m, resultPath, first, set)
	p.servers(m, o, parse)
	p.Removed, p.Added = optionDiff(m.Argv, p.Plan.Argv)
	return p, nil
}

// rerunCopy is where the rerun writes the file the manifest's option
// names at path: its .rerun copy beside it, when path lies inside dir
// (the rerun's directory) and is no symbolic link; else a refusal.
func rerunCopy(dir, option, path string) (own, refusal string) {
	if !inside(dir, path) {
		return "", fmt.Sprintf("the manifest's %s %s lies outside the rerun's directory %s: a rerun writes only there; "+
			"give %s PATH after \"--\" to choose the file yourself", option, shown(path), shown(dir), option)
	}
	ext := filepath.Ext(path)
	own = strings.TrimSuffix(path, ext) + ".rerun" + ext
	if info, err := os.Lstat(own); err == nil && info.Mode()&os.ModeSymlink != 0 {
		return "", fmt.Sprintf("the rerun's copy %s of the manifest's %s is a symbolic link: a rerun does not write through one", shown(own), option)
	}
	return own, ""
}

// inside reports whether path, resolved, lies inside dir: below it after
// both are made absolute and their symbolic links followed (as far as
// they exist), and not dir itself.
func inside(dir, path string) bool {
	d, errD := realPath(dir)
	f, errF := realPath(path)
	if errD != nil || errF != nil {
		return false
	}
	rel, err := filepath.Rel(d, f)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// realPath is path absolute with the symbolic links of its longest
// existing prefix followed; the rest, not yet created, is joined as is.
func realPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	var rest []string
	for p := abs; ; p = filepath.Dir(p) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			slices.Reverse(rest)
			return filepath.Join(append([]string{real}, rest...)...), nil
		}
		if p == filepath.Dir(p) {
			return "", fmt.Errorf("%s: no part of it exists", path)
		}
		rest = append(rest, filepath.Base(p))
	}
}

// files lists what the run reads and writes, and refuses a result that is
// not the rerun's own (an abbreviated option after "--" can rename it).
func (p *RerunPlan) files(m *report.Manifest, resultPath string, manifest *plan.Plan, set map[string]string) {
	c := p.Plan
	result := py.PathJoin(c.ResultDir, c.ResultFilename)
	if result != RerunPath(resultPath) {
		p.Refusals = append(p.Refusals, fmt.Sprintf("the run would save its result as %s, not as the rerun's own %s", shown(result), shown(RerunPath(resultPath))))
	}
	p.Writes = append(p.Writes, RerunFile{What: "result", Path: result}, RerunFile{What: "sidecar", Path: report.SidecarPath(result)})
	if c.PlotTimeline {
		p.Writes = append(p.Writes, RerunFile{What: "--plot-timeline", Path: report.TimelinePath(result)})
	}
	if c.PlotDatasetStats {
		p.Writes = append(p.Writes, RerunFile{What: "--plot-dataset-stats", Path: report.DatasetStatsPath(result)})
	}
	if c.SaveToPyTorchFormat {
		p.Writes = append(p.Writes, RerunFile{What: "$SAVE_TO_PYTORCH_BENCHMARK_FORMAT", Path: pyout.PyTorchPath(result)})
	}
	for _, w := range []struct {
		option         string
		path, original string
	}{{"save-partial", c.SavePartial, manifest.SavePartial}, {"report", c.Report, manifest.Report}} {
		if w.path == "" {
			continue
		}
		f := RerunFile{What: "--" + w.option, Path: w.path}
		if own, ok := set[w.option]; ok && own == w.path {
			f.Instead = w.original
		}
		p.Writes = append(p.Writes, f)
	}
	if c.DatasetPath != "" {
		p.Reads = append(p.Reads, RerunFile{What: "dataset", Path: c.DatasetPath})
	}
	if !c.SkipTokenizerInit {
		name := c.Tokenizer
		if name == "" {
			name = m.Tokenizer
		}
		if name != "" {
			p.Reads = append(p.Reads, RerunFile{What: "tokenizer", Path: name})
		}
	}
}

// servers lists where the run sends, which of them the user named and
// which the original run sent to, the credentials the user supplies, and
// the refusals that follow.
func (p *RerunPlan) servers(m *report.Manifest, o RerunOptions, parse func([]string) (*plan.Plan, error)) {
	p.Saved = m.Targets
	if len(p.Saved) == 0 {
		// A manifest older than its targets: the servers its own
		// command line names are all there is to go by.
		if orig, err := parse(m.Argv); err == nil {
			p.Saved = orig.Origins()
		}
	}
	var named []string
	for _, u := range append([]string{o.BaseURL}, urlValues(o.Extra)...) {
		if origin, ok := plan.Origin(u); ok {
			named = append(named, origin)
		}
	}
	for _, origin := range p.Plan.Origins() {
		p.Targets = append(p.Targets, RerunTarget{Origin: origin, Named: slices.Contains(named, origin), Saved: slices.Contains(p.Saved, origin)})
	}
	if p.Plan.APIKey != "" {
		p.Credentials = append(p.Credentials, "$OPENAI_API_KEY")
	}
	// The plan's Argv is the command line redacted: a token of extra (the
	// tail) that changed there is a secret the user gave.
	recorded := p.Plan.Argv[len(p.Plan.Argv)-len(o.Extra):]
	option := ""
	for i, a := range o.Extra {
		if strings.HasPrefix(a, "--") {
			option, _, _ = strings.Cut(a, "=")
		}
		if recorded[i] != a {
			secret := recorded[i]
			if !strings.HasPrefix(secret, "--") {
				secret = option + " " + secret
			}
			p.Credentials = append(p.Credentials, secret)
		}
	}
	for _, t := range p.Targets {
		switch {
		case !t.Named && !t.Saved:
			p.Refusals = append(p.Refusals, fmt.Sprintf("the manifest's command line sends to %s, where the original run did not "+
				"(it sent to %s): its sidecar was edited, or its command line rewritten; name the server with --base-url "+
				"(--yes does not cover a server the original did not use)", t.Origin, orNone(p.Saved)))
		case !t.Named && len(p.Credentials) > 0:
			p.Refusals = append(p.Refusals, fmt.Sprintf("%s would go to %s, a server the rerun's command line does not name: "+
				"a credential goes only to a server you name; give --base-url %s (or the URL after \"--\") if it is yours",
				strings.Join(p.Credentials, ", "), t.Origin, t.Origin))
		}
	}
}

// urlValues are the servers extra gives, from the options whose values
// are URLs.
func urlValues(extra []string) []string {
	var out []string
	for _, name := range rerunURLOptions {
		for _, v := range optionValues(extra, name) {
			out = append(out, strings.Split(v, ",")...)
		}
	}
	return out
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "no server the manifest records"
	}
	return strings.Join(list, ", ")
}

// optionDiff is what changed from the command line a to b: the options
// (each with its values) of a that b lacks, and those of b that a lacks.
func optionDiff(a, b []string) (removed, added []string) {
	ga, gb := optionGroups(a), optionGroups(b)
	for _, g := range ga {
		if !slices.Contains(gb, g) {
			removed = append(removed, g)
		}
	}
	for _, g := range gb {
		if !slices.Contains(ga, g) {
			added = append(added, g)
		}
	}
	return removed, added
}

// optionGroups splits a command line into its options, each joined with
// its values by spaces.
func optionGroups(argv []string) []string {
	var out []string
	for _, a := range argv {
		if strings.HasPrefix(a, "-") || len(out) == 0 {
			out = append(out, a)
			continue
		}
		out[len(out)-1] += " " + a
	}
	return out
}

// shown is text from the manifest as the plan prints it: quoted when it
// holds a character that is not printable (a newline could fake a line
// of the plan), else as it is.
func shown(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) {
		return strconv.Quote(s)
	}
	return s
}

// shownArgv is a command line as the plan prints it.
func shownArgv(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = shown(a)
	}
	return strings.Join(out, " ")
}

// Write prints the plan: the servers, the files, the options changed
// from the manifest's and the command line.
func (p *RerunPlan) Write(w io.Writer) {
	var b strings.Builder
	fmt.Fprintln(&b, "stampede rerun: what the rerun runs, against the original run:")
	for _, t := range p.Targets {
		why := "the original's"
		switch {
		case t.Named && t.Saved:
			why = "named by you; the original's too"
		case t.Named:
			why = "named by you"
		case !t.Saved:
			why = "from the manifest; NOT where the original run sent"
		}
		fmt.Fprintf(&b, "  server   %s (%s)\n", shown(t.Origin), why)
	}
	for _, s := range p.Saved {
		if !slices.ContainsFunc(p.Targets, func(t RerunTarget) bool { return t.Origin == s }) {
			fmt.Fprintf(&b, "  was      %s (the original's, not sent to)\n", shown(s))
		}
	}
	if len(p.Credentials) > 0 {
		fmt.Fprintf(&b, "  secrets  %s\n", shownArgv(p.Credentials))
	}
	for _, f := range p.Reads {
		fmt.Fprintf(&b, "  reads    %s %s\n", f.What, shown(f.Path))
	}
	for _, f := range p.Writes {
		instead := ""
		if f.Instead != "" {
			instead = ", instead of the manifest's " + shown(f.Instead)
		}
		fmt.Fprintf(&b, "  writes   %s (%s%s)\n", shown(f.Path), f.What, instead)
	}
	for _, g := range p.Removed {
		fmt.Fprintf(&b, "  option - %s\n", shown(g))
	}
	for _, g := range p.Added {
		fmt.Fprintf(&b, "  option + %s\n", shown(g))
	}
	fmt.Fprintf(&b, "  command  stampede serve %s\n", shownArgv(p.Plan.Argv))
	io.WriteString(w, b.String())
}

// Rerun runs cfg (the plan's) as serve would, with --num-runs repeats,
// and returns the result files it wrote.
func Rerun(ctx context.Context, run RunFunc, cfg *plan.Plan, stdout, stderr io.Writer) ([]string, error) {
	return runRepeated(ctx, run, cfg, max(cfg.NumRuns, 1), stdout, stderr)
}

// RerunSide is the comparison's argument for the rerun's result files:
// the files joined with commas, one side of repeated runs.
func RerunSide(files []string) string { return strings.Join(files, ",") }
