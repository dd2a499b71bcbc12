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
