package mock

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fastjson"
)

// FuzzRequestBodies feeds arbitrary bodies to every JSON decoder the event
// loop runs; none may panic, since a panic would take the server down.
func FuzzRequestBodies(f *testing.F) {
	for _, s := range []string{
		`{"model":"mock-llm","prompt":"hi","max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"prompt":[1,2,3],"max_tokens":null,"min_tokens":2,"ignore_eos":true}`,
		`{"prompt":[[1],[2,3]]}`,
		`{"prompt":["a","b"]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"x"},{"type":"image_url"}]}],"max_completion_tokens":2}`,
		`{"messages":[{"role":1}]}`,
		`{"input":"a","encoding_format":"float"}`,
		`{"query":"q","documents":["a",2],"top_n":1}`,
		`{"tokens":[1,2,999999]}`,
		`[]`, `null`, `{"prompt":{}}`, `{"stream_options":3,"stream":true,"prompt":"a"}`,
	} {
		f.Add([]byte(s))
	}
	s := benchServer()
	var p fastjson.Parser
	var ids []int32
	var g genParams
	ls := &loopState{}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, chat := range []bool{false, true} {
			if aerr := s.parseGeneration(&p, body, chat, &ids, &g); aerr == nil {
				if g.maxTokens < 1 || g.minTokens > g.maxTokens || len(g.promptTokens) == 0 {
					t.Fatalf("accepted implausible request %+v", g)
				}
			} else if aerr.status != 400 && aerr.status != 404 {
				t.Fatalf("status %d for a bad body", aerr.status)
			}
		}
		if v, aerr := s.parseBody(&ls.parser, body); aerr == nil {
			s.countInputs(ls, v)
			stringField(v, "query")
			arrayField(v, "documents")
		}
	})
}

func TestOutputLengths(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, Config{OutputLen: OutputUniform, Seed: 3})
	lengths := map[int]bool{}
	for i := 0; i < 40; i++ {
		req, _ := http.NewRequest("POST", base+"/v1/completions", strings.NewReader(`{"prompt":"a","max_tokens":8,"min_tokens":3}`))
		req.Header.Set("x-request-id", fmt.Sprint("req-", i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		m := readJSON(t, resp)
		n := int(m["usage"].(map[string]any)["completion_tokens"].(float64))
		finish := m["choices"].([]any)[0].(map[string]any)["finish_reason"]
		if n < 3 || n > 8 || (n == 8) != (finish == "length") || (n < 8 && finish != "stop") {
			t.Errorf("request %d: %d tokens, finish_reason %v", i, n, finish)
		}
		lengths[n] = true
	}
	if len(lengths) < 4 {
		t.Errorf("40 draws in [3, 8] gave only lengths %v", lengths)
	}
	m := readJSON(t, post(t, base+"/v1/completions", `{"prompt":"a","max_tokens":8,"ignore_eos":true}`))
	if n := m["usage"].(map[string]any)["completion_tokens"]; n != float64(8) {
		t.Errorf("ignore_eos gave %v tokens, want 8", n)
	}
	// Without max_tokens vLLM generates to the end of the context.
	_, base2 := startServer(t, Config{MaxModelLen: 20})
	m = readJSON(t, post(t, base2+"/v1/completions", `{"prompt":"abcde"}`))
	if n := m["usage"].(map[string]any)["completion_tokens"]; n != float64(15) {
		t.Errorf("no max_tokens gave %v tokens, want max_model_len - prompt = 15", n)
	}
}

func TestJitter(t *testing.T) {
	t.Parallel()
	truth := filepath.Join(t.TempDir(), "truth.log")
	const itl, jitter = 2 * time.Millisecond, 3 * time.Millisecond
	srv, base := startServer(t, Config{ITL: itl, Jitter: jitter, Seed: 9, TruthLog: truth})
	runStreams(t, base, 2, 0, `{"prompt":"a","max_tokens":20,"stream":true}`)
	reqs := closeAndRead(t, srv, truth)
	distinct := map[int64]bool{}
	for _, r := range reqs {
		for k := 1; k < len(r.Tokens); k++ {
			gap := r.Tokens[k].IntendedNs - r.Tokens[k-1].IntendedNs
			if gap < int64(itl) || gap >= int64(itl+jitter) {
				t.Errorf("intended gap %v outside [%v, %v)", time.Duration(gap), itl, itl+jitter)
			}
			distinct[gap] = true
		}
	}
	if len(distinct) < 10 {
		t.Errorf("only %d distinct gaps: jitter is not applied", len(distinct))
	}
}
