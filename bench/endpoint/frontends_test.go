package endpoint

import (
	"bytes"
	"slices"
	"testing"

	"github.com/stampede-bench/stampede/bench/backend"
	"github.com/stampede-bench/stampede/bench/internal/benchtest"
	"github.com/stampede-bench/stampede/datasets"
)

// Each front end's request names it in its Host header and has its path;
// the engine gets every front end's address, and the base URL stays the
// control requests'.
func TestFrontEndRequests(t *testing.T) {
	cfg, err := benchtest.ParseArgs([]string{"--base-url", "http://control:9000",
		"--server-urls", "http://10.0.0.5:8000,http://fe2.example:8001/prefix"}, benchtest.NoEnv)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s.FrontEnds() != 2 || s.FrontEndURL(1) != "http://fe2.example:8001/prefix/v1/completions" || cfg.BaseURL != "http://control:9000" {
		t.Fatalf("front ends %d, second %q, base %q", s.FrontEnds(), s.FrontEndURL(1), cfg.BaseURL)
	}
	req := &datasets.Request{Prompt: "hi", PromptLen: 1, ExpectedOutputLen: 1}
	for k, want := range []string{"POST /v1/completions HTTP/1.1\r\nHost: 10.0.0.5:8000\r\n",
		"POST /prefix/v1/completions HTTP/1.1\r\nHost: fe2.example:8001\r\n"} {
		wire, err := s.EncodeRequestTo(k, req, backend.BodyParams{Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(wire, []byte(want)) {
			t.Errorf("front end %d's request begins %q; want %q", k, wire[:min(len(wire), len(want))], want)
		}
	}
	ec := s.EngineConfig(nil)
	if !slices.Equal(ec.FrontEnds, []string{"10.0.0.5:8000", "fe2.example:8001"}) {
		t.Errorf("engine front ends %q", ec.FrontEnds)
	}
}

// Without --base-url, the first front end is the base URL.
func TestFirstFrontEndIsBase(t *testing.T) {
	cfg, err := benchtest.ParseArgs([]string{"--server-urls", "http://a:1,http://b:2"}, benchtest.NoEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BaseURL != "http://a:1" || cfg.APIURL != "http://a:1/v1/completions" {
		t.Errorf("base %q, API URL %q", cfg.BaseURL, cfg.APIURL)
	}
}
