package endpoint

import (
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/backend"
	"github.com/stampede-bench/stampede/bench/internal/benchtest"
	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/httpwire"
)

// TestTraceParentOnlyWithReceiver: with --otlp-receiver every request
// carries the traceparent of its x-request-id, replacing a --header one;
// without it the bytes are Python's, with no traceparent at all.
func TestTraceParentOnlyWithReceiver(t *testing.T) {
	req := &datasets.Request{Prompt: "hi", PromptLen: 1, ExpectedOutputLen: 1, RequestID: "id-1"}
	encode := func(args ...string) string {
		t.Helper()
		c, err := benchtest.ParseArgs(append([]string{"--base-url", "http://h:1"}, args...), benchtest.NoEnv)
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		wire, err := s.EncodeRequest(req, backend.BodyParams{Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		return string(wire)
	}
	if off := encode("--header", "X-A=b"); strings.Contains(strings.ToLower(off), "traceparent") {
		t.Errorf("without --otlp-receiver the request has a traceparent:\n%s", off)
	}
	on := encode("--otlp-receiver", "127.0.0.1:4317", "--header", "traceparent=00-user")
	want := "\r\ntraceparent: " + httpwire.TraceParent("id-1") + "\r\n"
	if !strings.Contains(on, want) || strings.Contains(on, "00-user") {
		t.Errorf("with --otlp-receiver, request:\n%s\nwant %q and not the user's traceparent", on, want)
	}
}
