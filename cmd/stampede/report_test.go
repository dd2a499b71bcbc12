package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	result := filepath.Join(dir, "r.json")
	body := `{"duration": 1.0, "completed": 2, "failed": 0, "mean_ttft_ms": NaN,
		"start_times": [0.0, 0.5], "ttfts": [0.01, 0.02], "latencies": [0.1, 0.2],
		"output_lens": [3, 3], "itls": [[0.01, 0.02], [0.01, 0.03]], "errors": ["", ""]}`
	if err := os.WriteFile(result, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "r.html")
	var stdout, stderr bytes.Buffer
	if code := runReport([]string{result, "-o", out}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `id="cdf-ttft"`) || !strings.Contains(stdout.String(), out) {
		t.Errorf("page or message missing: %q", stdout.String())
	}

	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{result}, exitUsage, "-o/--output"},
		{[]string{"-o", out}, exitUsage, "RESULT.json"},
		{[]string{result, "-o"}, exitUsage, "expected one argument"},
		{[]string{result, "--bogus", "-o", out}, exitUsage, "unrecognized arguments: --bogus"},
		{[]string{filepath.Join(dir, "missing.json"), "-o", out}, exitError, "missing.json"},
	} {
		stderr.Reset()
		if code := runReport(tt.args, &stdout, &stderr); code != tt.code || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming %q", tt.args, code, stderr.String(), tt.code, tt.want)
		}
	}
}
