package report

import (
	"path/filepath"
	"strings"
	"testing"
)

// A name too long for the filesystem is cut in the middle: every file named
// after it fits, the date tail and the extension stay, and two long names
// cut to the same length still differ.
func TestFitResultPath(t *testing.T) {
	short := "dir/openai-infqps-mock-llm-20261201-120000.json"
	if got, err := FitResultPath(short, 255); err != nil || got != short {
		t.Errorf("FitResultPath(%q) = %q, %v; want it unchanged", short, got, err)
	}
	long := func(c string) string {
		return "dir/openai-infqps-" + strings.Repeat(c, 300) + "-20261201-120000.json"
	}
	a, err := FitResultPath(long("a"), 255)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range SidePaths(a) {
		if n := len(filepath.Base(p)); n > 255 {
			t.Errorf("%s: %d bytes, more than 255", p, n)
		}
	}
	if !strings.HasPrefix(a, "dir/openai-infqps-aaa") || !strings.HasSuffix(a, "-20261201-120000.json") {
		t.Errorf("shortened name %q lost its start or its date", a)
	}
	if again, _ := FitResultPath(long("a"), 255); again != a {
		t.Errorf("fitting is not deterministic: %q then %q", a, again)
	}
	if b, _ := FitResultPath(long("b"), 255); len(b) != len(a) || b == a {
		t.Errorf("two long names fit to %q and %q", a, b)
	}
	if _, err := FitResultPath("dir/"+strings.Repeat("é", 200)+".json", 255); err != nil {
		t.Errorf("a name without a date tail: %v", err)
	}
	if _, err := FitResultPath(strings.Repeat("d/", 2100)+"x.json", 255); err == nil {
		t.Error("a directory past PATH_MAX fitted")
	}
}
