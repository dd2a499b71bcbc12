package search

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/internal/py"
)

// noEnv is an empty environment.
func noEnv(string) string { return "" }

// planRerun plans the rerun of dir/orig.json saved by a run against
// http://a:8000 with the manifest's command line argv.
func planRerun(t *testing.T, dir string, argv []string, o RerunOptions) *RerunPlan {
	t.Helper()
	if o.Getenv == nil {
		o.Getenv = noEnv
	}
	m := &report.Manifest{Argv: argv, Targets: []string{"http://a:8000"}}
	p, err := PlanRerun(m, filepath.Join(dir, "orig.json"), o)
	if err != nil {
		t.Fatalf("PlanRerun(%q): %v", argv, err)
	}
	return p
}

// refused reports whether one of p's refusals holds want.
func refused(p *RerunPlan, want string) bool {
	return slices.ContainsFunc(p.Refusals, func(r string) bool { return strings.Contains(r, want) })
}

// A manifest's files to write stay inside the rerun's directory, as their
// .rerun copies; one anywhere else is refused however it is spelled (the
// issue's --save-partial replaced a victim file).
func TestRerunWritesOnlyInItsDirectory(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	victim := filepath.Join(elsewhere, "victim.txt")
	if err := os.Symlink(elsewhere, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	base := []string{"--base-url", "http://a:8000", "--model", "m", "--save-result"}
	for _, c := range []struct {
		name string
		argv []string
	}{
		{"absolute", []string{"--save-partial", victim}},
		{"relative", []string{"--save-partial", filepath.Join(dir, "..", filepath.Base(elsewhere), "victim.txt")}},
		{"abbreviated", []string{"--save-par", victim}},
		{"joined", []string{"--report=" + filepath.Join(elsewhere, "r.html")}},
		{"through a link", []string{"--report", filepath.Join(dir, "link", "r.html")}},
		{"the directory itself", []string{"--save-partial", dir}},
	} {
		p := planRerun(t, dir, append(slices.Clone(base), c.argv...), RerunOptions{})
		if !refused(p, "lies outside the rerun's directory") {
			t.Errorf("%s: %q not refused: %q", c.name, c.argv, p.Refusals)
		}
	}

	p := planRerun(t, dir, append(slices.Clone(base), "--save-partial", filepath.Join(dir, "orig.partial"),
		"--report", filepath.Join(dir, "pages", "r.html")), RerunOptions{})
	if len(p.Refusals) != 0 {
		t.Fatalf("files inside the directory refused: %q", p.Refusals)
	}
	if p.Plan.SavePartial != filepath.Join(dir, "orig.rerun.partial") || p.Plan.Report != filepath.Join(dir, "pages", "r.rerun.html") {
		t.Errorf("the rerun writes --save-partial %s, --report %s; want their .rerun copies", p.Plan.SavePartial, p.Plan.Report)
	}
	if got := py.PathJoin(p.Plan.ResultDir, p.Plan.ResultFilename); got != filepath.Join(dir, "orig.rerun.json") {
		t.Errorf("result %s", got)
	}
	var out bytes.Buffer
	p.Write(&out)
	for _, want := range []string{
		"  server   http://a:8000 (the original's)\n",
		"  writes   " + filepath.Join(dir, "orig.rerun.json") + " (result)\n",
		"  writes   " + filepath.Join(dir, "orig.rerun.partial") + " (--save-partial, instead of the manifest's " + filepath.Join(dir, "orig.partial") + ")\n",
		"  option - --save-partial " + filepath.Join(dir, "orig.partial") + "\n",
		"  option + --result-filename orig.rerun.json\n",
		"  option + --save-partial " + filepath.Join(dir, "orig.rerun.partial") + "\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the plan lacks %q:\n%s", want, out.String())
		}
	}

	// The user's own choice after "--" is theirs; the result's name is
	// the rerun's.
	mine := filepath.Join(elsewhere, "mine.partial")
	p = planRerun(t, dir, append(slices.Clone(base), "--save-partial", victim), RerunOptions{Extra: []string{"--save-partial", mine}})
	if len(p.Refusals) != 0 || p.Plan.SavePartial != mine {
		t.Errorf("the user's --save-partial: %s, refused %q", p.Plan.SavePartial, p.Refusals)
	}
	m := &report.Manifest{Argv: base, Targets: []string{"http://a:8000"}}
	var usage *py.UsageError
	if _, err := PlanRerun(m, filepath.Join(dir, "orig.json"), RerunOptions{Extra: []string{"--result-filename", "orig.json"}, Getenv: noEnv}); !errors.As(err, &usage) {
		t.Errorf("--result-filename after --: %v, want a usage error", err)
	}
}

// A rerun sends where the original run sent, or where the user names; a
// secret the user gives goes only where the user names (the issue's
// manifest sent a re-given Authorization and the dataset's prompts to
// another host).
func TestRerunSendsOnlyWhereNamed(t *testing.T) {
	dir := t.TempDir()
	evil := []string{"--base-url", "http://evil:9000", "--model", "m", "--save-result"}
	auth := []string{"--header", "Authorization=Bearer s3cret"}
	for _, c := range []struct {
		name    string
		argv    []string
		o       RerunOptions
		refusal string // "" when allowed
	}{
		{"another host", evil, RerunOptions{}, "sends to http://evil:9000, where the original run did not"},
		{"another host with --yes's secret", evil, RerunOptions{Extra: auth}, "where the original run did not"},
		{"another host named", evil, RerunOptions{BaseURL: "http://EVIL:9000/"}, ""},
		{"another front end", []string{"--base-url", "http://a:8000", "--server-urls", "http://a:8000,http://evil:9000"}, RerunOptions{},
			"sends to http://evil:9000"},
		{"another scrape", []string{"--base-url", "http://a:8000", "--server-metrics", "http://evil:9000/metrics"}, RerunOptions{},
			"sends to http://evil:9000"},
		{"the same host", []string{"--base-url", "http://a:8000"}, RerunOptions{}, ""},
		{"a secret to the same host", []string{"--base-url", "http://a:8000"}, RerunOptions{Extra: auth},
			"--header Authorization=<redacted> would go to http://a:8000, a server the rerun's command line does not name"},
		{"a secret to a named host", []string{"--base-url", "http://a:8000"}, RerunOptions{BaseURL: "http://a:8000", Extra: auth}, ""},
		{"a secret with its host after --", []string{"--base-url", "http://a:8000"},
			RerunOptions{Extra: append([]string{"--base-url", "http://a:8000"}, auth...)}, ""},
		{"$OPENAI_API_KEY", []string{"--base-url", "http://a:8000"},
			RerunOptions{Getenv: func(k string) string { return map[string]string{"OPENAI_API_KEY": "sk-x"}[k] }},
			"$OPENAI_API_KEY would go to http://a:8000"},
		{"a URL's password", []string{"--base-url", "http://a:8000"}, RerunOptions{Extra: []string{"--server-metrics", "http://u:pw@a:8000/metrics"}},
			""}, // named by the very option that carries it
	} {
		p := planRerun(t, dir, c.argv, c.o)
		switch {
		case c.refusal == "" && len(p.Refusals) > 0:
			t.Errorf("%s: refused %q", c.name, p.Refusals)
		case c.refusal != "" && !refused(p, c.refusal):
			t.Errorf("%s: refusals %q; want one saying %q", c.name, p.Refusals, c.refusal)
		}
	}

	// A manifest older than its targets: the servers of its own command
	// line stand for the original's.
	m := &report.Manifest{Argv: []string{"--host", "b", "--port", "9"}}
	p, err := PlanRerun(m, filepath.Join(dir, "orig.json"), RerunOptions{Getenv: noEnv})
	if err != nil || len(p.Refusals) != 0 || !slices.Equal(p.Saved, []string{"http://b:9"}) {
		t.Errorf("an old manifest: %v, saved %q, refused %q", err, p.Saved, p.Refusals)
	}
}

// A manifest's text cannot fake a line of the plan.
func TestRerunPlanQuotesTheManifest(t *testing.T) {
	dir := t.TempDir()
	p := planRerun(t, dir, []string{"--base-url", "http://a:8000", "--label", "x\n  server   http://good:1 (the original's)"}, RerunOptions{})
	var out bytes.Buffer
	p.Write(&out)
	if strings.Contains(out.String(), "\n  server   http://good:1") {
		t.Errorf("a newline in the manifest printed as a line of the plan:\n%s", out.String())
	}
}
