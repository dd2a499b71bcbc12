package search

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/report"
)

// `stampede rerun FILE`: the command line kept in FILE's sidecar
// (report.Manifest) run again, then compared with FILE. The new result
// goes beside FILE as <FILE without .json>.rerun.json (with --num-runs,
// .rerun.runK.json each), so the original is never overwritten.

// rerunOutputOptions are the options that name the result's file: the
// rerun sets its own.
var rerunOutputOptions = map[string]bool{"result-dir": true, "result-filename": true}

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
	replaced := maps.Clone(rerunOutputOptions)
	if baseURL != "" {
		replaced["base-url"] = true
	}
	for _, a := range extra {
		if name, ok := strings.CutPrefix(a, "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			replaced[name] = true
		}
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
	return append(argv, extra...)
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
	Original string
	Now      string // "" when it could not be hashed
	Problem  string // why not
}

func (d DataMismatch) String() string {
	now := d.Now
	if now == "" {
		now = "not hashed: " + d.Problem
	}
	return fmt.Sprintf("the %s's SHA-256 was %s, is now %s", d.What, d.Original, now)
}

// Rerun runs cfg (RerunArgv parsed) as serve would, with --num-runs
// repeats, and returns the result files it wrote.
func Rerun(ctx context.Context, run RunFunc, cfg *plan.Plan, stdout, stderr io.Writer) ([]string, error) {
	return runRepeated(ctx, run, cfg, max(cfg.NumRuns, 1), stdout, stderr)
}

// RerunSide is the comparison's argument for the rerun's result files:
// the files joined with commas, one side of repeated runs.
func RerunSide(files []string) string { return strings.Join(files, ",") }
