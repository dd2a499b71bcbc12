package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
)

// Two front ends, one slower per token: request i goes to front end
// i mod 2, each saw exactly its share, and the sidecar's per-front-end
// figures show which one is slow.
func TestServerURLsSpreadRequests(t *testing.T) {
	fast := startTinyMock(t, mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond})
	slow := startTinyMock(t, mock.Config{TTFT: time.Millisecond, ITL: 15 * time.Millisecond})
	urls := []string{"http://" + fast.Addr(), "http://" + slow.Addr()}
	dir := t.TempDir()
	const n = 10
	stdout, stderr, err := runAt(t, context.Background(), urls[0],
		"--server-urls", urls[0]+","+urls[1],
		"--dataset-name", "random", "--num-prompts", "10", "--random-input-len", "8", "--random-output-len", "6",
		"--max-concurrency", "4", "--save-result", "--result-dir", dir, "--result-filename", "r.json")
	if err != nil {
		t.Fatalf("Run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	// Scheduled counts generation requests only, so the control requests
	// that go to --base-url (the first front end) are not in it.
	for i, srv := range []*mock.Server{fast, slow} {
		if got := srv.Stats().Scheduled; got != n/2 {
			t.Errorf("front end %d scheduled %d requests; want %d", i, got, n/2)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "r.stampede.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sc report.Sidecar
	if err := json.Unmarshal(raw, &sc); err != nil {
		t.Fatal(err)
	}
	if len(sc.FrontEnds) != 2 {
		t.Fatalf("sidecar front_ends = %+v; want 2", sc.FrontEnds)
	}
	for i, fe := range sc.FrontEnds {
		if want := urls[i] + "/v1/completions"; fe.URL != want || fe.Completed != n/2 || fe.Failed != 0 {
			t.Errorf("front end %d: %s completed %d failed %d; want %s with %d completed", i, fe.URL, fe.Completed, fe.Failed, want, n/2)
		}
	}
	// 15 ms against 1 ms between tokens: the slow one's ITL and E2EL
	// stand out whatever the machine's stalls.
	f, s := sc.FrontEnds[0], sc.FrontEnds[1]
	if s.ITLP50 < 10 || s.ITLP50 < 3*f.ITLP50 || s.E2ELP50 <= f.E2ELP50 {
		t.Errorf("per-front-end figures do not show the slow one: fast ITL p50 %.2f E2EL p50 %.2f, slow ITL p50 %.2f E2EL p50 %.2f",
			f.ITLP50, f.E2ELP50, s.ITLP50, s.E2ELP50)
	}
}

// Without --server-urls the sidecar has no front_ends.
func TestNoServerURLsNoFrontEnds(t *testing.T) {
	dir := t.TempDir()
	_, _, err := runAgainstMock(t, context.Background(), mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond},
		"--dataset-name", "random", "--num-prompts", "2", "--random-input-len", "8", "--random-output-len", "2",
		"--save-result", "--result-dir", dir, "--result-filename", "r.json")
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	raw, _ := os.ReadFile(filepath.Join(dir, "r.stampede.json"))
	if err := json.Unmarshal(raw, &keys); err != nil {
		t.Fatal(err)
	}
	if _, ok := keys["front_ends"]; ok {
		t.Errorf("sidecar has front_ends without --server-urls")
	}
}
