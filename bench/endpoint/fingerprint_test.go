package endpoint

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/internal/benchtest"
)

// vllmMetrics is an excerpt of vLLM 0.11's /metrics: an info gauge among
// counters.
const vllmMetrics = `# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",engine="0",gpu_memory_utilization="0.9",num_gpu_blocks="27152"} 1.0
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1234.0
`

const vllmModels = `{"object":"list","data":[
{"id":"lora-a","object":"model","root":"/adapters/a","max_model_len":null},
{"id":"llama","object":"model","root":"meta-llama/Llama-3.1-8B-Instruct","max_model_len":131072}]}`

func TestFingerprintOfAVLLMServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", "uvicorn")
		switch r.URL.Path {
		case "/version":
			w.Write([]byte(`{"version":"0.11.0"}`))
		case "/v1/models":
			w.Write([]byte(vllmModels))
		case "/metrics":
			w.Write([]byte(vllmMetrics))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	cfg, err := benchtest.ParseArgs([]string{"--base-url", srv.URL}, benchtest.NoEnv)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fp := s.Fingerprint(context.Background(), Model{ID: "meta-llama/Llama-3.1-8B-Instruct"})
	want := map[string]string{
		"version":                                "0.11.0",
		"header.server":                          "uvicorn",
		"model.id":                               "llama",
		"model.root":                             "meta-llama/Llama-3.1-8B-Instruct",
		"model.max_model_len":                    "131072",
		"info.vllm:cache_config_info.block_size": "16",
		"info.vllm:cache_config_info.enable_prefix_caching":  "True",
		"info.vllm:cache_config_info.gpu_memory_utilization": "0.9",
		"info.vllm:cache_config_info.num_gpu_blocks":         "27152",
		"info.vllm:cache_config_info.cache_dtype":            "auto",
	}
	for k, v := range want {
		if fp.Facts[k] != v {
			t.Errorf("%s = %q, want %q", k, fp.Facts[k], v)
		}
	}
	if len(fp.Facts) != len(want) {
		t.Errorf("facts %v, want exactly %v (no engine label, no counters)", fp.Facts, want)
	}
	if len(fp.Problems) != 0 {
		t.Errorf("problems %q", fp.Problems)
	}
}

func TestFingerprintOfAnSGLangServer(t *testing.T) {
	template := strings.Repeat("{{ messages }}", 40)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/get_server_info" {
			w.Write([]byte(`{"version":"0.5.1","tp_size":2,"enable_metrics":true,"chat_template":"` + template +
				`","internal_states":[{"a":1}],"lora_paths":null}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	cfg, _ := benchtest.ParseArgs([]string{"--base-url", srv.URL}, benchtest.NoEnv)
	s, _ := New(cfg)
	fp := s.Fingerprint(context.Background(), Model{ID: "m"})
	if fp.Facts["sglang.version"] != "0.5.1" || fp.Facts["sglang.tp_size"] != "2" || fp.Facts["sglang.enable_metrics"] != "true" {
		t.Errorf("facts %v", fp.Facts)
	}
	if v := fp.Facts["sglang.chat_template"]; !strings.HasPrefix(v, "sha256:") {
		t.Errorf("a long field kept as %q, want its hash", v)
	}
	if _, ok := fp.Facts["sglang.internal_states"]; ok || len(fp.Facts) != 4 {
		t.Errorf("facts %v: nested and null fields are left out", fp.Facts)
	}
}

func TestFingerprintOfAServerWithoutRoutes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			w.Write([]byte("not { prometheus"))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	cfg, err := benchtest.ParseArgs([]string{"--base-url", srv.URL}, benchtest.NoEnv)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := New(cfg)
	fp := s.Fingerprint(context.Background(), Model{ID: "m"})
	if len(fp.Facts) != 0 {
		t.Errorf("facts %v, want none: every route is missing or broken", fp.Facts)
	}
	// A missing route is no problem; a broken answer is one.
	if len(fp.Problems) != 1 || !strings.Contains(fp.Problems[0], "/metrics") {
		t.Errorf("problems %q, want the one of /metrics", fp.Problems)
	}
}

func TestFileSHA256(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.jsonl")
	os.WriteFile(a, []byte("abc"), 0o644)
	got, err := FileSHA256(a)
	// SHA-256("abc"), FIPS 180-2's example.
	if err != nil || got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("FileSHA256(abc) = %q, %v", got, err)
	}
	sub := filepath.Join(dir, "shards")
	os.Mkdir(sub, 0o755)
	os.WriteFile(filepath.Join(sub, "1.json"), []byte("x"), 0o644)
	before, err := FileSHA256(sub)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(sub, "1.json"), []byte("y"), 0o644)
	after, _ := FileSHA256(sub)
	if before == after {
		t.Errorf("a folder's hash did not change with a file's content")
	}
	if _, err := FileSHA256(filepath.Join(dir, "missing")); err == nil {
		t.Errorf("a missing file hashed")
	}
}

func TestTokenizerSHA256IsTheLoadedFiles(t *testing.T) {
	path := "../../testdata/tokenizers/llama3.json"
	cfg, err := benchtest.ParseArgs([]string{"--tokenizer", path}, benchtest.NoEnv)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := New(cfg)
	tok, err := s.LoadTokenizer(context.Background(), "m", nil)
	if err != nil {
		t.Fatal(err)
	}
	file, err := FileSHA256(path)
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := TokenizerSHA256("auto", path)
	if err != nil {
		t.Fatal(err)
	}
	if tok.SHA256 != file || resolved != file {
		t.Errorf("loaded %q, resolved %q, file %q: all three must agree", tok.SHA256, resolved, file)
	}
}

// FuzzFingerprintFacts feeds the fingerprint's readers a server's bytes:
// none may panic, and what they keep is text.
func FuzzFingerprintFacts(f *testing.F) {
	f.Add([]byte(`{"version":"0.11.0"}`))
	f.Add([]byte(vllmModels))
	f.Add([]byte(vllmMetrics))
	f.Add([]byte(`{"data":[]}`))
	f.Add([]byte(`{"version":{"a":1}}`))
	f.Add([]byte("x_info{a=\"\\\"\"} 1\n"))
	f.Add([]byte(`{"version":"0.5.1","tp_size":2,"enable_metrics":true,"internal_states":[{}],"x":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		facts := map[string]string{}
		_ = readObjectFacts(body, "sglang.", facts)
		_ = readVersionFacts(body, facts)
		_ = readModelFacts(body, Model{ID: "m"}, facts)
		_ = readInfoFacts(body, facts)
	})
}

// A vLLM server is not asked the other servers' routes.
func TestFingerprintAsksVLLMNoOtherRoutes(t *testing.T) {
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.Path)
		if r.URL.Path == "/metrics" {
			w.Write([]byte(vllmMetrics))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	cfg, _ := benchtest.ParseArgs([]string{"--base-url", srv.URL}, benchtest.NoEnv)
	s, _ := New(cfg)
	s.Fingerprint(context.Background(), Model{ID: "m"})
	if strings.Join(asked, " ") != "/version /v1/models /metrics" {
		t.Errorf("asked %q", asked)
	}
}
