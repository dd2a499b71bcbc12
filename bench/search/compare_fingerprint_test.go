package search_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/internal/benchtest"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/bench/search"
)

// writeFingerprinted writes a result file and, unless fp is nil, its sidecar.
func writeFingerprinted(t *testing.T, dir, name string, fp *report.Fingerprint) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(`{"request_throughput": 10.0}`), 0o666); err != nil {
		t.Fatal(err)
	}
	if fp != nil {
		if err := report.SaveSidecar(report.SidecarPath(p), &report.Sidecar{Version: report.SidecarVersion, Fingerprint: fp}, false); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func fingerprint(version, itl string) *report.Fingerprint {
	return &report.Fingerprint{
		Server: map[string]string{"version": version, "info.mockllm:config_info.itl": itl},
		Client: map[string]string{"stampede": "v1", "host": "a", "kernel": "6.1"},
	}
}

func TestCompareChecksLikeForLike(t *testing.T) {
	dir := t.TempDir()
	a := writeFingerprinted(t, dir, "a.json", fingerprint("0.11.0", "20ms"))
	same := writeFingerprinted(t, dir, "same.json", fingerprint("0.11.0", "20ms"))
	newer := writeFingerprinted(t, dir, "newer.json", fingerprint("0.12.0", "20ms"))
	slower := writeFingerprinted(t, dir, "slower.json", fingerprint("0.12.0", "40ms"))
	other := fingerprint("0.11.0", "20ms")
	other.Client["host"] = "b"
	otherHost := writeFingerprinted(t, dir, "otherhost.json", other)
	python := writeFingerprinted(t, dir, "python.json", nil)

	c := search.Compare(benchtest.CompareSides(t, a, same, newer, slower, otherHost, python),
		search.CompareOptions{Vary: []string{"server.version"}})
	checks := c.Fingerprints
	if !checks[0].Checked || len(checks[0].Diffs) != 0 || !checks[0].LikeForLike {
		t.Errorf("one setting twice: %+v, want alike", checks[0])
	}
	if !checks[1].LikeForLike || len(checks[1].Diffs) != 1 || checks[1].Diffs[0].Key != "server.version" {
		t.Errorf("the named change alone: %+v, want like for like with one difference", checks[1])
	}
	if checks[2].LikeForLike || !slices.Equal(checks[2].Unnamed, []string{"server.info.mockllm:config_info.itl"}) {
		t.Errorf("an unnamed change beside the named one: %+v, want unlike for like naming it", checks[2])
	}
	if len(checks[3].Diffs) != 0 {
		t.Errorf("another host of the same kind: %+v, want alike", checks[3])
	}
	if checks[4].Checked || checks[4].LikeForLike {
		t.Errorf("vLLM's own file: %+v, want unchecked", checks[4])
	}

	var out bytes.Buffer
	if err := c.Write(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	table := strings.Index(text, "metric ")
	for _, want := range []string{
		"A vs B: fingerprints alike",
		`A vs C: server.version: "0.11.0" → "0.12.0"` + "\n",
		"A vs D: unlike for like: server.info.mockllm:config_info.itl differs",
		"A vs F: no fingerprint in " + python,
	} {
		i := strings.Index(text, want)
		if i < 0 || i > table {
			t.Errorf("the output lacks %q before the table:\n%s", want, text)
		}
	}
	var js bytes.Buffer
	if err := json.NewEncoder(&js).Encode(c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"like_for_like":false`) || !strings.Contains(js.String(), `"vary":["server.version"]`) {
		t.Errorf("--json lacks the check: %s", js.String())
	}
}

func TestRerunArgv(t *testing.T) {
	m := &report.Manifest{Argv: []string{"--base-url", "http://a:8000", "--model", "m", "--header", "Authorization=<redacted>", "X-Run=1",
		"--result-filename=r.json", "--result-dir", "out", "--save-result", "--temperature", "-1"}}
	got := search.RerunArgv(m, "out/r.json", "http://b:9000", []string{"--header", "Authorization=Bearer x"})
	want := []string{"--model", "m", "--save-result", "--temperature", "-1",
		"--base-url", "http://b:9000", "--result-dir", "out", "--result-filename", "r.rerun.json",
		"--header", "Authorization=Bearer x"}
	if !slices.Equal(got, want) {
		t.Errorf("RerunArgv =\n%q, want\n%q", got, want)
	}
	if r := search.Redacted(m.Argv); !slices.Equal(r, []string{"--header"}) {
		t.Errorf("Redacted = %q", r)
	}
	same := search.RerunArgv(m, "out/r.json", "", nil)
	if !slices.Contains(same, "http://a:8000") {
		t.Errorf("without --base-url the original's stays: %q", same)
	}
}

// The settings of a result JSON are the setup, not statistics: two sweep
// points of another concurrency are unlike for like (they were called
// "fingerprints alike"), a changed num_prompts is a setup difference
// (it was a "can't tell" row), and --vary setting.KEY names the change.
func TestCompareSettingsAreTheSetup(t *testing.T) {
	dir := t.TempDir()
	write := func(name, settings string, fp *report.Fingerprint) string {
		p := filepath.Join(dir, name)
		body := `{"date": "20260101-000000", "backend": "vllm", "label": null, "model_id": "m", ` + settings +
			`, "burstiness": 1.0, "duration": 2.0, "completed": 200, "request_throughput": 10.0}`
		if err := os.WriteFile(p, []byte(body), 0o666); err != nil {
			t.Fatal(err)
		}
		if fp != nil {
			if err := report.SaveSidecar(report.SidecarPath(p), &report.Sidecar{Version: report.SidecarVersion, Fingerprint: fp}, false); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	c8 := write("sweep-max-concurrency=8.json", `"num_prompts": 200, "request_rate": "inf", "max_concurrency": 8`, fingerprint("0.11.0", "20ms"))
	c32 := write("sweep-max-concurrency=32.json", `"num_prompts": 200, "request_rate": "inf", "max_concurrency": 32`, fingerprint("0.11.0", "20ms"))
	more := write("more.json", `"num_prompts": 400, "request_rate": "inf", "max_concurrency": 8`, fingerprint("0.11.0", "20ms"))
	python := write("python.json", `"num_prompts": 200, "request_rate": "inf", "max_concurrency": null`, nil)

	c := search.Compare(benchtest.CompareSides(t, c8, c32, more, python), search.CompareOptions{})
	for _, r := range c.Rows {
		if r.Metric == "num_prompts" || r.Metric == "max_concurrency" || r.Metric == "burstiness" {
			t.Errorf("a setting is a row of the table: %+v", r)
		}
	}
	want := [][]string{{"setting.max_concurrency"}, {"setting.num_prompts"}, {"setting.max_concurrency"}}
	for i, chk := range c.Fingerprints {
		if !slices.Equal(chk.Unnamed, want[i]) || chk.LikeForLike {
			t.Errorf("side %c: %+v; want unlike for like, %v unnamed", 'B'+i, chk, want[i])
		}
	}
	var out bytes.Buffer
	if err := c.Write(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		`A vs B: setting.max_concurrency: "8" → "32"  (not named by --vary)`,
		"A vs B: unlike for like: setting.max_concurrency differs",
		`A vs C: setting.num_prompts: "200" → "400"`,
		`A vs D: setting.max_concurrency: "8" → "null"`,
		"A vs D: no fingerprint in " + python,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "fingerprints alike") || strings.Contains(text, "num_prompts  ") {
		t.Errorf("points of another setting called alike, or a setting judged as a statistic:\n%s", text)
	}

	named := search.Compare(benchtest.CompareSides(t, c8, c32), search.CompareOptions{Vary: []string{"setting.max_concurrency"}})
	if chk := named.Fingerprints[0]; !chk.LikeForLike || len(chk.Diffs) != 1 {
		t.Errorf("--vary setting.max_concurrency: %+v, want like for like with the one difference", chk)
	}
	same := search.Compare(benchtest.CompareSides(t, c8, c8), search.CompareOptions{})
	out.Reset()
	if err := same.Write(&out); err != nil || !strings.Contains(out.String(), "A vs B: fingerprints alike") {
		t.Errorf("one file twice is not alike: %v\n%s", err, out.String())
	}
}
