package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"regexp"
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

// TestImportArrows checks the arrows DESIGN.md allows at the top: nothing
// outside cmd imports cmd, and only cmd imports bench (bench's own
// sub-packages aside). Checking every package's direct imports covers
// transitive ones, since the first package on a bad path is itself outside
// cmd. Tests count too, with one exception: end-to-end tests may start the
// mock server in-process (cmd/mockllm/mock), as a fixture.
func TestImportArrows(t *testing.T) {
	module, pkgs := listPackages(t)
	const fixture = "cmd/mockllm/mock"
	for _, p := range pkgs {
		if under(p.rel, "cmd") {
			continue
		}
		imports := [][]string{p.Imports, p.TestImports, p.XTestImports}
		for i, list := range imports {
			kind := []string{"imports", "test imports", "external test imports"}[i]
			for _, imp := range list {
				rel, ok := strings.CutPrefix(imp, module+"/")
				if !ok {
					continue
				}
				if under(rel, "cmd") && (i == 0 || rel != fixture) {
					t.Errorf("%s %s %s: only commands may import cmd", p.rel, kind, rel)
				}
				if under(rel, "bench") && !under(p.rel, "bench") {
					t.Errorf("%s %s %s: only commands may import bench", p.rel, kind, rel)
				}
			}
		}
	}
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
