package endpoint

import (
	"strings"

	"github.com/stampede-bench/stampede/internal/py"
)

// serverOptions are the options that name the server a command talks to.
var serverOptions = []string{"base-url", "host", "port", "server-urls"}

// SampleOnly makes s the server of a command that samples requests and
// sends none (--dry-run, stampede dataset). Such a command contacts a
// server only when the command line named one (--base-url, --host, --port
// or --server-urls): serve's defaults point at 127.0.0.1:8000, and
// whatever listens there would be asked for the model and, without a
// tokenizer, for every prompt's token count. (A dry run of 100,000
// 8,192-token random prompts without --tokenizer once sent 403,861
// /tokenize calls, for 757 s, to a mock that happened to listen there.)
// Without a named server, DiscoverModel needs --model, LoadTokenizer has no
// /tokenize to fall back on, and the caller skips the server-tokenizer
// alignment (Offline).
func (s *Server) SampleOnly() {
	named := false
	for _, name := range serverOptions {
		named = named || s.cfg.Given(name)
	}
	s.offline = !named
}

// Offline reports whether s is a sampling command's server that the
// command line did not name, which nothing may contact (SampleOnly).
func (s *Server) Offline() bool { return s.offline }

// sampler names the command an offline server belongs to, for its errors.
func (s *Server) sampler() string {
	if s.cfg.DryRun {
		return "--dry-run"
	}
	return "stampede dataset"
}

// namesNoServer is the clause an offline server's errors end with.
func (s *Server) namesNoServer() string {
	return s.sampler() + " contacts no server unless --base-url, --host, --port or --server-urls names one"
}

// offlineModelError is DiscoverModel's answer offline without --model.
func (s *Server) offlineModelError() error {
	return py.UsageErrorf("--model is required here: %s to ask for its first model (give --model, the id the requests would name, "+
		"or the server's address)", s.namesNoServer())
}

// tokenizerHint is what an OSError for a missing tokenizer first says to
// pass.
const tokenizerHint = "pass --tokenizer PATH (the model's tokenizer.json, a directory holding one, or a Hugging Face id in the local cache)"

// noTokenizerError is the OSError of a run left without a tokenizer: first
// what to do, on a line of its own, then each reason on the next lines
// (what loading said, what the server's /tokenize said), so the line a
// user reads first is the one that helps.
func noTokenizerError(first string, reasons ...string) error {
	var b strings.Builder
	b.WriteString(first)
	for _, r := range reasons {
		b.WriteString("\n  " + r)
	}
	return &py.Error{Type: "OSError", Msg: b.String()}
}
