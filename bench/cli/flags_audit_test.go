package cli

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/internal/py"
)

// flagAudit is how each of vLLM's options that stampede's code does not
// read is accounted for. Every other Python option must be read somewhere
// outside the flag table (TestFlagAudit checks the source).
var flagAudit = map[string]struct {
	status string   // noEffect: none in Python either; readme: named in docs/cli.md's "Not supported yet"
	refuse []string // for status "refused": arguments that must give a usage error naming it
}{
	"--use-beam-search":   {status: "noEffect"},
	"--trust-remote-code": {status: "readme"},
	// Read, but refused where they would change the run.
	"--custom-ensure-client-side-data": {status: "refused", refuse: []string{
		"--dataset-name", "custom_image", "--dataset-path", "x.jsonl", "--custom-ensure-client-side-data"}},
	"--tokenizer-mode": {status: "refused", refuse: []string{"--tokenizer-mode", "grok2"}},
}

// moduleRoot is the module's directory, seen from this package's.
const moduleRoot = "../.."

// readSelectors collects every field or method name selected (x.Name) in
// the module's non-test Go files, the flag table excepted.
func readSelectors(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != moduleRoot {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
			filepath.Clean(path) == filepath.Join(moduleRoot, "bench", "cli", "flags.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				names[sel.Sel.Name] = true
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// notSupportedSection is docs/cli.md's "Not supported yet" section.
func notSupportedSection(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(moduleRoot, "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "### Not supported yet")
	if !ok {
		t.Fatal(`docs/cli.md has no "### Not supported yet" section`)
	}
	section, _, _ := strings.Cut(rest, "\n### ")
	return section
}

// TestFlagAudit: every option of vllm bench serve changes stampede's run
// (its field is read outside the flag table), or changes nothing in Python
// either, or is refused with a usage error naming it, or docs/cli.md's "Not
// supported yet" names it; refused ones are named there too.
func TestFlagAudit(t *testing.T) {
	read := readSelectors(t)
	readme := notSupportedSection(t)
	table := newActionTable(newFlagParser(&Flags{}, testBackends))
	python := pythonLongOptions(t)
	for _, opt := range python {
		a := table.byName[opt]
		if a == nil {
			t.Errorf("%s is not in the option table", opt)
			continue
		}
		if a.help {
			continue
		}
		field := a.flag.Field().Name
		audit, listed := flagAudit[opt]
		if !listed {
			if !read[field] {
				t.Errorf("%s (field %s) is parsed and never read: make it work, refuse it, or list it in flagAudit and docs/cli.md", opt, field)
			}
			continue
		}
		switch audit.status {
		case "noEffect":
		case "readme", "refused":
			if !strings.Contains(readme, "`"+opt) {
				t.Errorf("%s is %s but docs/cli.md's \"Not supported yet\" does not name it", opt, audit.status)
			}
		default:
			t.Errorf("%s: unknown audit status %q", opt, audit.status)
		}
		if audit.status == "refused" {
			_, err := parseArgs(audit.refuse, func(string) string { return "" })
			var u *py.UsageError
			if !errors.As(err, &u) || !strings.Contains(u.Msg, opt) {
				t.Errorf("%q: %v, want a usage error naming %s", audit.refuse, err, opt)
			}
		}
	}
	for opt := range flagAudit {
		if !contains(python, opt) {
			t.Errorf("flagAudit lists %s, which is not a vllm bench serve option", opt)
		}
	}
}
