package pyout

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stampede-bench/stampede/metrics"
)

func TestResultFilename(t *testing.T) {
	const date = "20261129-173005"
	dir := t.TempDir()
	tests := []struct {
		name string
		p    RunSettings
		want string
	}{
		{"nothing saved", RunSettings{Backend: "openai", ModelID: "m", RequestRate: 1}, ""},
		{"defaults", RunSettings{Backend: "openai", ModelID: "meta-llama/Llama-3.1-8B", RequestRate: math.Inf(1), SaveResult: true},
			"openai-infqps-Llama-3.1-8B-" + date + ".json"},
		{"label, rate, concurrency", RunSettings{Backend: "openai", Label: strptr("nightly"), ModelID: "org/sub/model",
			RequestRate: 10, MaxConcurrency: 64, AppendResult: true},
			"nightly-10.0qps-concurrency64-model-" + date + ".json"},
		{"empty label falls back to backend", RunSettings{Backend: "vllm", Label: strptr(""), ModelID: "m",
			RequestRate: 0.5, PlotTimeline: true}, "vllm-0.5qps-m-" + date + ".json"},
		{"tiny rate in exponent form", RunSettings{Backend: "vllm", ModelID: "m", RequestRate: 1e-05, SaveResult: true},
			"vllm-1e-05qps-m-" + date + ".json"},
		{"ramp-up", RunSettings{Backend: "openai", ModelID: "m", RequestRate: math.Inf(1), MaxConcurrency: 8,
			RampUpStrategy: "exponential", RampUpStartRPS: 1, RampUpEndRPS: 10, SaveResult: true},
			"openai-ramp-up-exponential-1qps-10qps-concurrency8-m-" + date + ".json"},
		{"explicit file name", RunSettings{Backend: "openai", ModelID: "m", SaveResult: true, ResultFilename: "out.json"},
			"out.json"},
		{"result dir created and joined", RunSettings{Backend: "openai", ModelID: "m", RequestRate: 2, SaveResult: true,
			ResultDir: filepath.Join(dir, "a", "b")}, filepath.Join(dir, "a", "b") + "/openai-2.0qps-m-" + date + ".json"},
		{"dir with trailing slash", RunSettings{Backend: "openai", ModelID: "m", SaveResult: true,
			ResultDir: dir + "/c/", ResultFilename: "r.json"}, dir + "/c/r.json"},
		{"absolute file name wins over dir", RunSettings{Backend: "openai", ModelID: "m", SaveResult: true,
			ResultDir: dir + "/d", ResultFilename: "/tmp/x.json"}, "/tmp/x.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResultFilename(&tt.p, date)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("ResultFilename = %q, want %q", got, tt.want)
			}
			if tt.p.ResultDir != "" {
				if info, err := os.Stat(tt.p.ResultDir); err != nil || !info.IsDir() {
					t.Errorf("--result-dir %s not created: %v", tt.p.ResultDir, err)
				}
			}
		})
	}
}

func TestResultFilenameDirError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p := RunSettings{Backend: "openai", ModelID: "m", SaveResult: true, ResultDir: file + "/sub"}
	if _, err := ResultFilename(&p, "d"); err == nil {
		t.Error("a result dir under a regular file was accepted")
	}
}

func smallResult(t *testing.T, model string) *Result {
	t.Helper()
	d := &metrics.RunData{DurationNs: 1e9}
	s, err := metrics.Compute(d, metrics.ComputeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := BuildResult(s, d, &ReportParams{RunSettings: RunSettings{Backend: "openai", ModelID: model, RequestRate: math.Inf(1)}}, nil, goldenNow)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSaveResult(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	a, b := smallResult(t, "a"), smallResult(t, "b")
	ja, _ := a.MarshalJSON()
	jb, _ := b.MarshalJSON()
	steps := []struct {
		r      *Result
		append bool
		want   string
	}{
		{a, true, string(ja)},                     // append to a missing file: no newline first
		{b, true, string(ja) + "\n" + string(jb)}, // append to a non-empty file
		{b, false, string(jb)},                    // plain save truncates
		{a, true, string(jb) + "\n" + string(ja)}, // and appending goes on from there
	}
	for i, st := range steps {
		if err := SaveResult(path, st.r, st.append); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != st.want {
			t.Errorf("step %d: file = %q, want %q", i, got, st.want)
		}
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := SaveResult(path, a, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != string(ja) {
		t.Errorf("append to an empty file = %q, want no leading newline", got)
	}
	if err := SaveResult(filepath.Join(path, "x"), a, false); err == nil {
		t.Error("saving under a regular file succeeded")
	}
}
