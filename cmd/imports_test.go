package cmd

// The design's import table: one row per package of the module, holding it
// to the module's packages it may import and to the imports from outside the
// module it must not have. The rows are DESIGN.md's package table and its
// arrows, written down:
//
//	bench → engine → shard → httpwire / sse,  shard → metrics
//
// Dependencies point down that data flow; nothing outside cmd imports cmd;
// no package under bench/ imports bench; bench touches no socket and does not
// import shard; datasets do not import metrics; httpwire and sse are leaves
// that know bytes, not sockets; internal/ holds the helpers every package may
// use. A new arrow is a change to DESIGN.md first, then to its row here, and
// a new package needs a row before it builds a green tree.

// importRule is one row of the table.
type importRule struct {
	pkg string // the package's path inside the module
	// may lists the module's packages its non-test files may import, beside
	// the helpers every package may use; "x/..." is x and every package
	// below it.
	may []string
	// tests lists what its tests may import beyond may: fixtures such as the
	// in-process mock server, and test-helper packages.
	tests []string
	// mustNot lists imports from outside the module (the standard library
	// included) that its non-test files must not have; tests may use them
	// to build fixtures (an httptest server, a TLS listener).
	mustNot []string
	why     string // the DESIGN.md rule the row states, quoted in failures
}

const (
	// mock is the in-process mock server, the one package of cmd that tests
	// elsewhere may start as a fixture.
	mock = "cmd/mockllm/mock"
	// benchTest is where tests of several bench packages share helpers.
	benchTest = "bench/internal/benchtest"
)

// benchTests is what the tests of bench's packages may use beside their
// own imports: the mock server, their shared helpers, and bench/cli to build
// a plan from a command line as a user would.
var benchTests = []string{mock, benchTest, "bench/cli"}

// helpers are internal/'s packages, which every package outside internal/
// may import (DESIGN.md: "helpers every package may use, such as Python's
// text forms"). internal/tls13 is not one: the TLS record layer belongs to
// the transports that use it; nor is internal/memlimit, the process's GC
// settings, held only by the run (engine) and its handshakes (shard).
var helpers = []string{"internal/py", "internal/jsonstr", "internal/fifo", "internal/hfenv", "internal/buildinfo", "internal/scratch"}

// Imports from outside the module that rows deny.
var (
	// sockets is everything that reaches the network, for the packages that
	// know bytes or values only.
	sockets = []string{"net", "net/...", "crypto/tls"}
	// httpAndTLS is the network client of the standard library, for packages
	// that may name an address but must not open connections of their own.
	httpAndTLS = []string{"net", "net/http/...", "crypto/tls"}
	// httpClient is net/http alone, for the packages that frame HTTP
	// through httpwire.
	httpClient = []string{"net/http/..."}
)

// ownedImports are imports from outside the module that one package owns:
// every other package must not have them.
var ownedImports = []struct {
	imp    string
	owners []string
	why    string
}{
	{"github.com/jessevdk/go-flags", []string{"bench/cli"},
		"bench/cli is the argparse emulation; everyone else reads the plan's domain values"},
	{"github.com/panjf2000/gnet/v2/...", []string{mock},
		"gnet serves the mock server; the client's transport is shard's own epoll loop"},
}

var importRules = []importRule{
	// The commands.
	{pkg: "cmd",
		why: "the module's top-level cmd package only documents the commands"},
	{pkg: "cmd/stampede",
		may:     []string{"bench/...", "datasets/..."},
		tests:   []string{mock, "engine"},
		mustNot: httpAndTLS,
		why:     "the thin command: argv → bench/cli → bench (and the subcommands' packages under bench); it holds no benchmark logic and opens no connection; its tests tie option defaults to the engine's"},
	{pkg: "cmd/mockllm",
		may: []string{mock, "datasets", "datasets/tokenizer"},
		why: "the mock server's command starts cmd/mockllm/mock"},
	{pkg: mock,
		may:     []string{"datasets", "httpwire", "sse", "internal/tls13"},
		mustNot: httpClient,
		why:     "the mock shares no state with the client (no bench, engine, shard or metrics) and frames HTTP through httpwire, not net/http"},
	{pkg: "cmd/mockllm/mockproc",
		why: "starting the mock as a process needs nothing of the module"},
	{pkg: "cmd/mockllm/internal/loadclient",
		tests: []string{mock},
		why:   "the mock's load client is a plain socket client, apart from stampede's transport"},
	{pkg: "cmd/mockllm/internal/mockbench",
		may: []string{"cmd/mockllm/internal/loadclient", mock},
		why: "the mock's own benchmark drives the mock with its load client"},
	{pkg: "cmd/fidelity",
		may: []string{mock, "cmd/mockllm/mockproc", "engine", "httpwire", "sse", "metrics"},
		why: "the fidelity benchmark drives engine against the mock and checks the token times against its log"},
	{pkg: "cmd/hostile",
		may: []string{mock, "cmd/mockllm/mockproc"},
		why: "the hostile-server benchmark runs the mock's hostile answers against the stampede binary"},
	{pkg: "cmd/testsummary",
		why: "make test's reader of go test -json stands alone"},
	{pkg: "cmd/clusterbench",
		may: []string{mock, "cmd/mockllm/mockproc", "bench/report", "bench/pyout", "metrics"},
		why: "the cluster benchmark runs stampede processes against the mock and reads their outputs; its quantiles are metrics' nearest rank, the health line's"},

	// The run and its rooms.
	{pkg: "bench",
		may: []string{"bench/plan", "bench/backend", "bench/endpoint", "bench/cluster", "bench/scrape",
			"bench/outcome", "bench/progress", "bench/pyout", "bench/report", "bench/spans",
			"datasets/...", "engine", "httpwire", "sse", "metrics"},
		// Its clients' end-to-end tests drive the real Run, so they live here.
		tests:   append([]string{"bench/search", "bench/multiturn", "bench/pyout/pyouttest", "bench/report/reporttest"}, benchTests...),
		mustNot: httpAndTLS,
		why:     "bench is the run only: it touches no socket (net, net/http, crypto/tls), reaches the shards through engine and never shard, reads its settings from bench/plan, not bench/cli, and its clients (search, multiturn) are not its parts"},
	{pkg: "bench/plan",
		may:     []string{"datasets", "metrics"},
		mustNot: httpAndTLS,
		why:     "the run's settings as domain values, filled by bench/cli and read by everyone else: it imports neither bench/cli nor go-flags"},
	{pkg: "bench/cli",
		may:     []string{"bench/plan", "datasets", "httpwire"},
		mustNot: []string{"net/http/...", "crypto/tls"},
		why:     "the argparse emulation fills the plan; it knows argv, not the run's transport (no shard, engine or bench)"},
	{pkg: "bench/backend",
		may:     []string{"bench/plan", "datasets/...", "httpwire", "sse"},
		tests:   benchTests,
		mustNot: httpAndTLS,
		why:     "the backend table and its request bodies are bytes built before the run; what an answer means lives in sse, never in shard"},
	{pkg: "bench/endpoint",
		may:   []string{"bench/plan", "bench/backend", "bench/pyout", "datasets/...", "engine", "httpwire"},
		tests: benchTests,
		why:   "the server-side pieces shared by the run and its clients (target URL, control client, model discovery, profile requests) may use the network; they do not import bench"},
	{pkg: "bench/cluster",
		may:   []string{"bench/plan", "bench/endpoint", "bench/outcome", "bench/pyout", "bench/report", "engine", "metrics"},
		tests: benchTests,
		why:   "agents, registration, clock offsets and exact merges: the control plane may use sockets here; no package under bench/ imports bench"},
	{pkg: "bench/scrape",
		may:   []string{"bench/plan", "bench/report", "engine", "metrics"},
		tests: benchTests,
		why:   "the server's /metrics scraper imports neither its parent bench nor shard"},
	{pkg: "bench/spans",
		may:   []string{"bench/report", "httpwire", "metrics"},
		tests: benchTests,
		why:   "the OTLP trace receiver and the join of the server's spans to requests may use the network (net/http, gRPC) on its own goroutines; it never runs on a shard (no engine or shard) and does not import its parent bench"},
	{pkg: "bench/search",
		may:     []string{"bench/plan", "bench/cli", "bench/backend", "bench/outcome", "bench/pyout", "bench/report", "metrics"},
		tests:   benchTests,
		mustNot: sockets,
		why:     "sweep, SLO search, repeat and compare are clients of Run that get the run function passed in: they do not import their parent bench; a sweep point is the command line with one flag changed, so it is parsed again by bench/cli's rules"},
	{pkg: "bench/outcome",
		may:     []string{"bench/pyout", "bench/report", "engine", "metrics"},
		tests:   benchTests,
		mustNot: sockets,
		why:     "what one run measured, shared by bench and its clients: values, no sockets, no import of bench"},
	{pkg: "bench/progress",
		may:     []string{"engine"},
		tests:   benchTests,
		mustNot: sockets,
		why:     "the progress bar draws engine's snapshots; it does not import bench"},
	{pkg: "bench/multiturn",
		may:     []string{"bench/plan", "bench/cli", "bench/backend", "bench/endpoint", "bench/search", "bench/outcome", "datasets/...", "engine", "metrics"},
		tests:   benchTests,
		mustNot: httpAndTLS,
		why:     "conversations run through engine with bench/endpoint and bench/backend, wired by cmd/stampede: they do not import their parent bench"},
	{pkg: "bench/pyout",
		may:     []string{"bench/plan", "datasets", "metrics"},
		tests:   append([]string{"bench/pyout/pyouttest"}, benchTests...),
		mustNot: sockets,
		why:     "Python's outputs byte for byte, from the plan and metrics; bench/report does not change its bytes, so it does not import bench/report"},
	{pkg: "bench/pyout/pyouttest",
		may: []string{"metrics"},
		why: "test helpers of Python's outputs"},
	{pkg: "bench/report",
		may:     []string{"bench/plan", "bench/pyout", "engine", "metrics"},
		tests:   append([]string{"bench/pyout/pyouttest", "bench/report/reporttest"}, benchTests...),
		mustNot: sockets,
		why:     "our sidecar, blocks and HTML report read Python's outputs and engine's published types; nothing above engine imports shard"},
	{pkg: "bench/report/reporttest",
		why: "test helpers of the report"},
	{pkg: benchTest,
		may: []string{"bench/plan", "bench/cli", "bench/backend", "bench/endpoint", "bench/search", "bench/outcome", "bench/pyout",
			"bench/report", "datasets/...", "engine", "metrics", mock},
		why: "test helpers shared by bench's packages; like every package under bench/, it does not import bench"},

	// The engine and its transport.
	{pkg: "engine",
		may:     []string{"shard", "httpwire", "sse", "metrics", "internal/memlimit"},
		tests:   []string{mock, "shard/shardtest"},
		mustNot: httpClient,
		why:     "engine → shard → httpwire/sse: engine places and paces the shards and gathers their results; it parses no bytes"},
	{pkg: "shard",
		may:     []string{"httpwire", "sse", "metrics", "internal/tls13", "internal/memlimit"},
		tests:   []string{"shard/shardtest", "metrics/metricstest"},
		mustNot: httpClient,
		why:     "shard → httpwire/sse and shard → metrics: the event loop delivers bytes and stamps; HTTP framing is httpwire's, an answer's meaning is sse's, and nothing above it is imported"},
	{pkg: "shard/shardtest",
		why: "test servers for the shard's tests"},
	{pkg: "httpwire",
		mustNot: sockets,
		why:     "httpwire is a leaf: HTTP/1.1 framing of bytes; it knows no sockets, SSE or JSON"},
	{pkg: "sse",
		tests:   []string{"httpwire"},
		mustNot: sockets,
		why:     "sse is a leaf: events and what an answer means, from bytes; it knows no sockets"},
	{pkg: "metrics",
		mustNot: sockets,
		why:     "metrics records and computes from values; it imports nothing above it"},
	{pkg: "metrics/metricstest",
		may: []string{"metrics"},
		why: "the gathered results of recorders, for the tests of the packages that record"},

	// The datasets.
	{pkg: "datasets",
		may:   []string{"datasets/hfhub", "datasets/pyrand", "datasets/chattemplate"},
		tests: []string{"datasets/tokenizer"},
		why:   "every --dataset-name source; datasets do not import metrics, and the tokenizer is handed to them"},
	{pkg: "datasets/tokenizer",
		tests: []string{"datasets"},
		why:   "tokenizers know text and token ids; they do not import datasets or metrics"},
	{pkg: "datasets/chattemplate",
		tests: []string{"datasets"},
		why:   "chat templates render conversations; they do not import datasets or metrics"},
	{pkg: "datasets/hfhub",
		may: []string{"datasets/pyrand"},
		why: "the Hugging Face hub's files and their rows; datasets do not import metrics"},
	{pkg: "datasets/pyrand",
		mustNot: sockets,
		why:     "Python's random module is a leaf"},

	// The helpers.
	{pkg: "internal/py",
		may:     []string{"internal/jsonstr"},
		mustNot: sockets,
		why:     "Python's text forms have one home every package may import, so it imports nothing of the module above it"},
	{pkg: "internal/jsonstr",
		mustNot: sockets,
		why:     "JSON string unescaping is a leaf every package may import"},
	{pkg: "internal/fifo",
		mustNot: sockets,
		why:     "the FIFO queue is a leaf every package may import"},
	{pkg: "internal/hfenv",
		mustNot: sockets,
		why:     "the Hugging Face environment is a leaf every package may import"},
	{pkg: "internal/buildinfo",
		mustNot: sockets,
		why:     "the build's version is a leaf every package may import"},
	{pkg: "internal/scratch",
		mustNot: sockets,
		why:     "the disk a run spills to (unlinked files, free space) is a leaf every package may import"},
	{pkg: "internal/memlimit",
		mustNot: sockets,
		why:     "the GC's settings have one holder, which the run and the TLS handshakes' ramp share; it imports nothing of the module"},
	{pkg: "internal/tls13",
		mustNot: []string{"net", "net/http/..."},
		why:     "the TLS 1.3 record layer seals and opens bytes for the transports; it opens no connection"},
}
