package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:9: tokenizer files absent (run scripts/fetch-tokenizers.sh)\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"--- SKIP: TestA (0.00s)\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:3: got 2, want 3\n"}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"--- FAIL: TestB (0.00s)\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestB"}`,
		`{"Action":"output","Package":"p","Test":"TestC","Output":"noise of a passing test\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestC"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\tp\t0.01s\n"}`,
		`{"Action":"fail","Package":"p"}`,
		`# q`, `q/x.go:1: syntax error`,
		`{"Action":"output","Package":"r","Output":"ok  \tr\t0.02s\n"}`,
		`{"Action":"pass","Package":"r"}`,
	}, "\n")
	var out bytes.Buffer
	failed, err := summarize(strings.NewReader(in), &out)
	if err != nil || !failed {
		t.Fatalf("failed %v, err %v; want a failure reported", failed, err)
	}
	got := out.String()
	for _, want := range []string{
		"got 2, want 3\n", "--- FAIL: TestB", "FAIL\tp\t0.01s\n", "q/x.go:1: syntax error\n", "ok  \tr\t0.02s\n",
		"1 tests skipped:\n  1 × tokenizer files absent (run scripts/fetch-tokenizers.sh)\n      p TestA\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "noise of a passing test") {
		t.Errorf("a passing test's output was printed:\n%s", got)
	}
}

func TestAllPassing(t *testing.T) {
	in := `{"Action":"output","Package":"r","Output":"ok  \tr\t0.02s\n"}` + "\n" + `{"Action":"pass","Package":"r"}`
	var out bytes.Buffer
	failed, err := summarize(strings.NewReader(in), &out)
	if err != nil || failed || out.String() != "ok  \tr\t0.02s\n" {
		t.Errorf("failed %v, err %v, output %q", failed, err, out.String())
	}
}

// TestRealGoTest runs go test -json on a package of this module and checks
// the summary keeps go test's closing line.
func TestRealGoTest(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	raw, err := exec.Command(goCmd, "test", "-json", "-count=1", "-run", "TestAllPassing", ".").Output()
	if err != nil {
		t.Fatalf("go test -json: %v", err)
	}
	var out bytes.Buffer
	if failed, err := summarize(bytes.NewReader(raw), &out); failed || err != nil {
		t.Fatalf("failed %v, err %v:\n%s", failed, err, out.String())
	}
	if !strings.HasPrefix(out.String(), "ok  \tgithub.com/stampede-bench/stampede/cmd/testsummary\t") {
		t.Errorf("summary %q lacks go test's ok line", out.String())
	}
}
