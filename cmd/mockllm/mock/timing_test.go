package mock

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// runStreams sends n streaming completions, the i-th after i*stagger, and
// waits for all of them; each carries x-request-id "r<i>".
func runStreams(t testing.TB, base string, n int, stagger time.Duration, body string) {
	t.Helper()
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * stagger)
			req, _ := http.NewRequest("POST", base+"/v1/completions", strings.NewReader(body))
			req.Header.Set("x-request-id", fmt.Sprintf("r%d", i))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Errorf("stream %d: %v", i, err)
				return
			}
			defer resp.Body.Close()
			readSSE(t, resp.Body)
		}()
	}
	wg.Wait()
}

// closeAndRead stops the server and reads its truth log.
func closeAndRead(t testing.TB, srv *Server, path string) []TruthRequest {
	t.Helper()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	reqs, err := ReadTruthLog(path)
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}

func TestPerStreamSchedule(t *testing.T) {
	t.Parallel()
	truth := filepath.Join(t.TempDir(), "truth.log")
	const ttft, prefill, itl = 30 * time.Millisecond, time.Millisecond, 10 * time.Millisecond
	srv, base := startServer(t, Config{TTFT: ttft, PrefillPerToken: prefill, ITL: itl, TruthLog: truth})
	runStreams(t, base, 3, 3*time.Millisecond, `{"prompt":"abcdefghij","max_tokens":6,"stream":true}`)
	reqs := closeAndRead(t, srv, truth)
	if len(reqs) != 3 {
		t.Fatalf("%d requests in the truth log, want 3", len(reqs))
	}
	for _, r := range reqs {
		if len(r.Tokens) != 6 {
			t.Fatalf("request %s: %d tokens, want 6", r.RequestID, len(r.Tokens))
		}
		for k, tok := range r.Tokens {
			want := r.ArrivalNs + int64(ttft+10*prefill) + int64(k)*int64(itl)
			if tok.Index != k || tok.IntendedNs != want {
				t.Errorf("request %s token %d: index %d intended %d, want arrival + %v", r.RequestID, k, tok.Index, tok.IntendedNs, time.Duration(want-r.ArrivalNs))
			}
			if tok.SentNs < tok.IntendedNs {
				t.Errorf("request %s token %d sent %v early", r.RequestID, k, time.Duration(tok.IntendedNs-tok.SentNs))
			}
		}
	}
	sum := srv.Timing()
	if sum.TTFT.Count != 3 || sum.ITL.Count != 15 || sum.Lateness.Count != 18 {
		t.Errorf("summary counts %+v", sum)
	}
	if sum.TTFT.P50 < int64(ttft+10*prefill) {
		t.Errorf("true TTFT p50 %v below the configured %v", time.Duration(sum.TTFT.P50), ttft+10*prefill)
	}
}

func TestDecodeStepSharesSteps(t *testing.T) {
	t.Parallel()
	truth := filepath.Join(t.TempDir(), "truth.log")
	const itl = 20 * time.Millisecond
	srv, base := startServer(t, Config{Mode: DecodeStep, ITL: itl, TTFT: 5 * time.Millisecond, TruthLog: truth})
	runStreams(t, base, 4, 5*time.Millisecond, `{"prompt":"abc","max_tokens":10,"stream":true}`)
	overruns := srv.Stats().StepOverruns
	reqs := closeAndRead(t, srv, truth)
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	byStep := map[int64][]TruthToken{}
	var origin int64 = 1<<63 - 1
	for _, r := range reqs {
		if len(r.Tokens) != 10 {
			t.Fatalf("request %s: %d tokens", r.RequestID, len(r.Tokens))
		}
		if r.Tokens[0].IntendedNs <= r.ArrivalNs {
			t.Errorf("request %s: first token at %d, not after arrival %d", r.RequestID, r.Tokens[0].IntendedNs, r.ArrivalNs)
		}
		for _, tok := range r.Tokens {
			byStep[tok.IntendedNs] = append(byStep[tok.IntendedNs], tok)
			origin = min(origin, tok.IntendedNs)
		}
	}
	shared := 0
	for step, toks := range byStep {
		if overruns == 0 && (step-origin)%int64(itl) != 0 {
			t.Errorf("step at %v is off the %v grid", time.Duration(step-origin), itl)
		}
		if len(toks) > 1 {
			shared++
		}
	}
	// Streams step together: a step that falls inside another stream's
	// run of tokens gives that stream a token too. This holds however far
	// apart the requests arrived; only the check that some step was shared
	// at all needs two of them to overlap (each runs 10 steps, 200 ms).
	for _, a := range reqs {
		for _, b := range reqs {
			first, last := b.Tokens[0].IntendedNs, b.Tokens[len(b.Tokens)-1].IntendedNs
			for _, tok := range a.Tokens {
				if tok.IntendedNs < first || tok.IntendedNs > last {
					continue
				}
				if !slices.ContainsFunc(byStep[tok.IntendedNs], func(o TruthToken) bool { return inRequest(b, o) }) {
					t.Errorf("step at %v gave request %s a token but not request %s, running then", time.Duration(tok.IntendedNs-origin), a.RequestID, b.RequestID)
				}
			}
		}
	}
	if shared == 0 {
		t.Errorf("no step gave a token to more than one stream: %d distinct steps for 40 tokens", len(byStep))
	}
}

// inRequest reports whether tok is one of r's tokens.
func inRequest(r TruthRequest, tok TruthToken) bool {
	return slices.Contains(r.Tokens, tok)
}

func TestMaxNumSeqsQueues(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{PerStream, DecodeStep} {
		t.Run(mode.String(), func(t *testing.T) {
			truth := filepath.Join(t.TempDir(), "truth.log")
			srv, base := startServer(t, Config{Mode: mode, ITL: 10 * time.Millisecond, MaxNumSeqs: 2, TruthLog: truth})
			runStreams(t, base, 4, 0, `{"prompt":"abc","max_tokens":3,"stream":true}`)
			reqs := closeAndRead(t, srv, truth)
			if len(reqs) != 4 {
				t.Fatalf("%d requests, want 4", len(reqs))
			}
			sort.Slice(reqs, func(i, j int) bool { return reqs[i].Tokens[0].IntendedNs < reqs[j].Tokens[0].IntendedNs })
			firstDone := min(reqs[0].Tokens[2].SentNs, reqs[1].Tokens[2].SentNs)
			for _, r := range reqs[2:] {
				if r.Tokens[0].SentNs < firstDone {
					t.Errorf("request %s started at %d before a slot was free at %d", r.RequestID, r.Tokens[0].SentNs, firstDone)
				}
			}
		})
	}
}

func TestTruthLogRoundTrip(t *testing.T) {
	t.Parallel()
	truth := filepath.Join(t.TempDir(), "truth.log")
	srv, base := startServer(t, Config{TruthLog: truth})
	ids := []string{"plain", "with space", "100%", ""}
	for _, id := range ids {
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"x"}],"max_tokens":3,"stream":true}`))
		if id != "" {
			req.Header.Set("X-Request-Id", id)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		readSSE(t, resp.Body)
		resp.Body.Close()
	}
	readJSON(t, post(t, base+"/v1/embeddings", `{"input":"abc"}`))
	reqs := closeAndRead(t, srv, truth)
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want 5", len(reqs))
	}
	for i, r := range reqs {
		wantTokens := 3
		wantID := ""
		if i < len(ids) {
			wantID = ids[i]
		} else {
			wantTokens = 1
		}
		if r.Seq != uint64(i+1) || r.RequestID != wantID || len(r.Tokens) != wantTokens {
			t.Errorf("request %d: seq %d id %q %d tokens; want seq %d id %q %d tokens", i, r.Seq, r.RequestID, len(r.Tokens), i+1, wantID, wantTokens)
		}
		prev := r.ArrivalNs
		for k, tok := range r.Tokens {
			if tok.Index != k || tok.SentNs < prev || tok.IntendedNs > tok.SentNs {
				t.Errorf("request %d token %d: %+v after %d", i, k, tok, prev)
			}
			prev = tok.SentNs
		}
	}
}

func TestReadTruthLogErrors(t *testing.T) {
	tests := []struct{ name, content, want string }{
		{"unknown record", "X 1 2\n", "unknown record"},
		{"bad number", "R one 2 -\n", "malformed number"},
		{"token before request", "T 1 0 5 5\n", "no R line"},
		{"repeated request", "R 1 2 -\nR 1 3 -\n", "repeated request"},
		{"bad escape", "R 1 2 a%zz\n", "malformed escape"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			if err := writeFile(path, truthHeader+tt.content); err != nil {
				t.Fatal(err)
			}
			if _, err := ReadTruthLog(path); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadTruthLog = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
