package pyout

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stampede-bench/stampede/metrics"
)

func TestTerminalText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Not Found", "Not Found"},
		{"", ""},
		{"Traceback:\n\tline\nValueError: x", "Traceback:\n\tline\nValueError: x"},
		{"café ✓", "café ✓"},
		{"Bad\x1b[2J\x1b]0;owned\x07Gateway", `Bad\x1b[2J\x1b]0;owned\x07Gateway`},
		{"over\rwrite", `over\rwrite`},
		{"del\x7f nul\x00", `del\x7f nul\x00`},
		{"c1 \u009b31m", `c1 \u009b31m`},
		{"bad utf-8 \xff\xfe", `bad utf-8 \xff\xfe`},
	}
	for _, tt := range tests {
		if got := TerminalText(tt.in); got != tt.want {
			t.Errorf("TerminalText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestServerTextEscapedOnlyOnTheTerminal: a failed request's error with
// terminal escapes is printed escaped, and saved as Python saves it.
func TestServerTextEscapedOnlyOnTheTerminal(t *testing.T) {
	reason := "Bad\x1b[2J\x07Gateway"
	d := &metrics.RunData{DurationNs: int64(time.Second), Log: metrics.LogOf(
		metrics.RequestResult{Success: true, PromptLen: 10, OutputTokens: 2, ChunkEvents: 2, TTFTNs: 1e8, LatencyNs: 2e8, ITLNs: []int64{1e8}},
		metrics.RequestResult{PromptLen: 10, Error: reason},
	)}
	s, err := metrics.Compute(d, metrics.ComputeOptions{Percentiles: []float64{99}})
	if err != nil {
		t.Fatal(err)
	}
	p := &ReportParams{RunSettings: RunSettings{RequestRate: math.Inf(1), PercentileMetrics: []string{"ttft"}, SaveDetailed: true}}
	var out bytes.Buffer
	if err := WriteResult(&out, s, p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Error 0: Bad\\x1b[2J\\x07Gateway\n") || strings.ContainsAny(out.String(), "\x1b\x07") {
		t.Errorf("printed:\n%q", out.String())
	}
	res, err := BuildResult(s, d, p, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	saved, err := res.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	// json.dumps writes ESC and BEL as \u001b and \u0007.
	if !strings.Contains(string(saved), `"errors": ["", "Bad\u001b[2J\u0007Gateway"]`) {
		t.Errorf("saved:\n%s", saved)
	}
}

// FuzzTerminalText: the escaped text holds no control character but
// newline and tab, and text without any comes back unchanged.
func FuzzTerminalText(f *testing.F) {
	for _, s := range []string{"Not Found", "Bad\x1b[2J\x07", "\r\n\t", "\u009b", "\xff\xfe", "café"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := TerminalText(s)
		for _, r := range out {
			if r != '\n' && r != '\t' && unicode.IsControl(r) {
				t.Fatalf("TerminalText(%q) = %q keeps %U", s, out, r)
			}
		}
		if !utf8.ValidString(out) {
			t.Fatalf("TerminalText(%q) = %q is not UTF-8", s, out)
		}
		if !needsEscape(s) && out != s {
			t.Fatalf("TerminalText(%q) = %q changed clean text", s, out)
		}
	})
}
