package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// pkg is what `go list -json` says about one of the module's packages.
type pkg struct {
	ImportPath   string
	Name         string
	Doc          string
	Imports      []string
	TestImports  []string
	XTestImports []string

	rel string // the path inside the module, e.g. "cmd/mockllm/mock"
}

// listPackages lists every package of the module with the go command.
func listPackages(t *testing.T) (module string, pkgs []pkg) {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	out, err := exec.Command(goCmd, "list", "-m").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	module = strings.TrimSpace(string(out))
	cmd := exec.Command(goCmd, "list", "-e", "-json", module+"/...")
	cmd.Stderr = os.Stderr
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("go list -json %s/...: %v", module, err)
	}
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		p.rel = strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return module, pkgs
}

// under reports whether the package at rel is dir or inside it.
func under(rel, dir string) bool { return rel == dir || strings.HasPrefix(rel, dir+"/") }

// matches reports whether the path rel is pattern or, for a pattern ending
// in "/...", pattern's directory or a path below it.
func matches(pattern, rel string) bool {
	if dir, ok := strings.CutSuffix(pattern, "/..."); ok {
		return under(rel, dir)
	}
	return rel == pattern
}

// matchesAny reports whether rel matches one of patterns.
func matchesAny(patterns []string, rel string) bool {
	for _, pattern := range patterns {
		if matches(pattern, rel) {
			return true
		}
	}
	return false
}

// importRulesByPackage indexes importRules by package path.
func importRulesByPackage(t *testing.T) map[string]importRule {
	t.Helper()
	rules := make(map[string]importRule, len(importRules))
	for _, r := range importRules {
		if _, dup := rules[r.pkg]; dup {
			t.Fatalf("importRules has two rows for %s", r.pkg)
		}
		rules[r.pkg] = r
	}
	return rules
}

// importViolations lists what p imports against its row: each line names
// the package, the import and the DESIGN.md rule it breaks.
func importViolations(module string, p pkg, r importRule) []string {
	var out []string
	may := r.may
	if !under(p.rel, "internal") {
		may = append(slices.Clone(may), helpers...)
	}
	testMay := append(slices.Clone(may), r.tests...)
	check := func(imp, verb string, allowed []string, outside bool) {
		rel, inModule := strings.CutPrefix(imp, module+"/")
		switch {
		case inModule && rel == p.rel:
		case inModule && !matchesAny(allowed, rel):
			out = append(out, fmt.Sprintf("%s %s %s, which is not on its allow-list (%s: %s)", p.rel, verb, rel, p.rel, r.why))
		case !inModule && outside && matchesAny(r.mustNot, imp):
			out = append(out, fmt.Sprintf("%s %s %s, which its row forbids (%s: %s)", p.rel, verb, imp, p.rel, r.why))
		case !inModule && outside:
			for _, o := range ownedImports {
				if matches(o.imp, imp) && !slices.Contains(o.owners, p.rel) {
					out = append(out, fmt.Sprintf("%s %s %s, which only %s may import (%s)", p.rel, verb, imp, strings.Join(o.owners, ", "), o.why))
				}
			}
		}
	}
	for _, imp := range p.Imports {
		check(imp, "imports", may, true)
	}
	for _, imp := range slices.Concat(p.TestImports, p.XTestImports) {
		check(imp, "has tests that import", testMay, false)
	}
	return out
}

// TestImportArrows holds every package of the module to its row of
// importRules (cmd/imports_test.go), DESIGN.md's package table as an
// allow-list: the module's packages it may import, the outside imports it
// must not have, and why. A package without a row fails, so a new package
// gets its arrows decided before it grows any. Only direct imports are
// checked: every package on a longer path has a row of its own.
func TestImportArrows(t *testing.T) {
	module, pkgs := listPackages(t)
	rules := importRulesByPackage(t)
	var violations []string
	for _, p := range pkgs {
		r, ok := rules[p.rel]
		if !ok {
			violations = append(violations, fmt.Sprintf("%s has no row in importRules (cmd/imports_test.go): a new package needs one, and a new arrow is a change to DESIGN.md first", p.rel))
			continue
		}
		violations = append(violations, importViolations(module, p, r)...)
	}
	slices.Sort(violations)
	for _, v := range violations {
		t.Error(v)
	}
	if len(violations) > 0 {
		t.Logf("%d imports break DESIGN.md's arrows", len(violations))
	}
}

// TestImportAllowListRows checks the table itself: every row says why, every
// package a row allows has a row of its own (so a misspelt path cannot
// allow nothing in silence), and no row forbids one of the module's
// packages, which only the allow-lists decide.
func TestImportAllowListRows(t *testing.T) {
	rules := importRulesByPackage(t)
	hasRow := func(pattern string) bool {
		for pkg := range rules {
			if matches(pattern, pkg) {
				return true
			}
		}
		return false
	}
	arrows, testArrows := 0, 0
	for _, r := range importRules {
		if r.why == "" {
			t.Errorf("importRules' row for %s does not say why", r.pkg)
		}
		for _, pattern := range slices.Concat(r.may, r.tests) {
			if !hasRow(pattern) {
				t.Errorf("importRules' row for %s allows %s, which has no row", r.pkg, pattern)
			}
		}
		for _, imp := range r.mustNot {
			if hasRow(imp) {
				t.Errorf("importRules' row for %s forbids %s, one of the module's packages: leave it off the allow-list instead", r.pkg, imp)
			}
		}
		for pkg := range rules {
			if pkg != r.pkg && matchesAny(r.may, pkg) {
				arrows++
			}
			if pkg != r.pkg && !matchesAny(r.may, pkg) && matchesAny(r.tests, pkg) {
				testArrows++
			}
		}
	}
	for _, h := range helpers {
		if !hasRow(h) {
			t.Errorf("helper %s has no row in importRules", h)
		}
	}
	t.Logf("importRules: %d rows, %d allowed arrows between the module's packages (helpers aside), %d more for tests",
		len(importRules), arrows, testArrows)
}

// TestPackageDocs checks that every package says what it is for in a doc
// comment that starts the way godoc expects.
func TestPackageDocs(t *testing.T) {
	_, pkgs := listPackages(t)
	for _, p := range pkgs {
		want := "Package " + p.Name + " "
		if p.Name == "main" {
			want = "Command " + path.Base(p.rel) + " "
		}
		if !strings.HasPrefix(p.Doc, want) {
			t.Errorf("%s: doc comment %q does not start with %q", p.rel, p.Doc, want)
		}
	}
}

// TestReadmeLayout checks docs/architecture.md's layout table against the tree: every
// row names a package, and every package is a row or is named (by its path
// below the row's) in the row of the nearest package above it. The module's
// top-level cmd package, which only documents the commands, needs no row.
func TestReadmeLayout(t *testing.T) {
	_, pkgs := listPackages(t)
	readme, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "\n## Layout\n")
	if !ok {
		t.Fatal(`docs/architecture.md has no "## Layout" section`)
	}
	table, _, _ = strings.Cut(table, "\n## ")
	rowRE := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|(.*)\\|$")
	rows := map[string]string{} // package path → the row's description
	for _, m := range rowRE.FindAllStringSubmatch(table, -1) {
		rows[m[1]] = m[2]
	}
	if len(rows) == 0 {
		t.Fatal("docs/architecture.md's layout table has no rows")
	}
	exists := map[string]bool{}
	for _, p := range pkgs {
		exists[p.rel] = true
	}
	for row := range rows {
		if !exists[row] {
			t.Errorf("docs/architecture.md's layout table has a row for %s, which is not a package", row)
		}
	}
	for _, p := range pkgs {
		if p.rel == "cmd" {
			continue
		}
		if _, ok := rows[p.rel]; ok {
			continue
		}
		parent := ""
		for row := range rows {
			if under(p.rel, row) && len(row) > len(parent) {
				parent = row
			}
		}
		if parent == "" {
			t.Errorf("docs/architecture.md's layout table has no row for %s", p.rel)
			continue
		}
		if sub := strings.TrimPrefix(p.rel, parent+"/"); !strings.Contains(rows[parent], "`"+sub+"`") {
			t.Errorf("docs/architecture.md's layout row for %s does not name `%s` (package %s)", parent, sub, p.rel)
		}
	}
}
