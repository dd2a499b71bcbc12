# stampede — build, test, benchmark, lint, demo.
#
# `make demo` builds and runs a real benchmark against the built-in mock
# server; `make test` runs the unit tests, the fuzz seed corpora and the race
# detector over the packages with concurrency.

GO          ?= go
BIN         ?= bin
STATICCHECK_VERSION ?= v0.8.2
# Packages whose tests exercise goroutines, shards or sockets run under -race.
RACE_PKGS   ?= ./engine/... ./shard/... ./metrics/... ./cmd/mockllm/... ./bench/...
BENCHTIME   ?= 1s

.PHONY: all build test test-unit test-race bench lint fmt vet staticcheck demo fuzz clean

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./cmd/...

# Fuzz targets' seed corpora (testdata/fuzz and f.Add seeds) run as ordinary
# tests under `go test`.
test: test-unit test-race

test-unit:
	$(GO) test -count=1 ./...

test-race:
	$(GO) test -count=1 -race $(RACE_PKGS)

bench:
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) ./...

lint: fmt vet staticcheck

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	@command -v staticcheck >/dev/null 2>&1 || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	PATH="$$PATH:$$($(GO) env GOPATH)/bin" staticcheck ./...

# FUZZTIME per target; `make fuzz FUZZTIME=2m`.
FUZZTIME ?= 30s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f ($(FUZZTIME))"; \
	    $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

demo: build
	@bash scripts/demo.sh

clean:
	rm -rf $(BIN)
