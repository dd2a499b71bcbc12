package plan

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const (
	module     = "github.com/stampede-bench/stampede"
	moduleRoot = "../.."
)

// forbidden are the imports that would tie the plan to the command line:
// it is filled from argv, and must not know how.
var forbidden = []string{"github.com/jessevdk/go-flags", module + "/bench/cli"}

// TestPlanImportsNoCommandLine walks the plan's imports within the module
// (non-test files) and fails on go-flags or bench/cli anywhere among them.
func TestPlanImportsNoCommandLine(t *testing.T) {
	fset := token.NewFileSet()
	seen := map[string]bool{}
	var visit func(pkg string, via []string)
	visit = func(pkg string, via []string) {
		if seen[pkg] {
			return
		}
		seen[pkg] = true
		dir := filepath.Join(moduleRoot, strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/"))
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, spec := range f.Imports {
				path, _ := strconv.Unquote(spec.Path.Value)
				chain := append(via[:len(via):len(via)], path)
				for _, bad := range forbidden {
					if path == bad {
						t.Errorf("the plan imports %s: %s", bad, strings.Join(chain, " → "))
					}
				}
				if path == module || strings.HasPrefix(path, module+"/") {
					visit(path, chain)
				}
			}
		}
	}
	visit(module+"/bench/plan", []string{module + "/bench/plan"})
	if len(seen) < 2 {
		t.Fatal("the walk found no imports at all; is moduleRoot right?")
	}
}
