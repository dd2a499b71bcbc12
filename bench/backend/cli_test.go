package backend

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/bench/plan"
)

// parseArgs parses a `stampede serve` command line over this package's
// backend table, with getenv as the environment.
func parseArgs(args []string, getenv func(string) string) (*plan.Plan, error) {
	return cli.ParseEnv(args, Choices(), getenv)
}

// noEnv is an empty environment.
func noEnv(string) string { return "" }

// TestHelpGoldenFromTable renders the help over the backend table against
// the cli package's goldens, which its tests render over a fixture: the
// --backend choices there are this table's names, in its order.
func TestHelpGoldenFromTable(t *testing.T) {
	t.Setenv("COLUMNS", "80")
	var b bytes.Buffer
	if err := cli.WriteHelp(&b, "", Choices()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "cli", "testdata", "flags", "help.golden")
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("help over the backend table differs from %s: update cli's testBackends to match the table", path)
	}
}

// TestCLIBackends checks the facts Backends gives the command line
// against the table's own fields.
func TestCLIBackends(t *testing.T) {
	got := Choices()
	if len(got) != len(backends) {
		t.Fatalf("%d rows, want %d", len(got), len(backends))
	}
	for i, b := range backends {
		g := got[i]
		if g.Name != b.name || g.Pooling != b.pooling || g.OpenAICompatible != b.openAICompatible ||
			g.Completions != (b.api.kind == completionsKind) {
			t.Errorf("row %d: %+v does not match the table's %s", i, g, b.name)
		}
	}
}
