package cli

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/internal/py"
)

var requestIDPrefix = regexp.MustCompile(`^bench-[0-9a-f]{8}-$`)

func noEnv(string) string { return "" }

func mustParse(t *testing.T, args ...string) *plan.Plan {
	t.Helper()
	c, err := parseArgs(args, noEnv)
	if err != nil {
		t.Fatalf("parseArgs(%q): %v", args, err)
	}
	return c
}

func TestValidationErrors(t *testing.T) {
	tests := []struct {
		args     []string
		typ, msg string
	}{
		{[]string{"--max-concurrency", "0"}, "ValueError", "--max-concurrency must be greater than 0"},
		{[]string{"--max-concurrency", "-3", "--ramp-up-strategy", "linear"}, "ValueError", "--max-concurrency must be greater than 0"},
		{[]string{"--ramp-up-strategy", "linear", "--request-rate", "5"}, "ValueError",
			"When using ramp-up, do not specify --request-rate. The request rate will be controlled by ramp-up parameters. Please remove the --request-rate argument."},
		{[]string{"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1"}, "ValueError",
			"When using --ramp-up-strategy, both --ramp-up-start-rps and --ramp-up-end-rps must be specified"},
		{[]string{"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "-1", "--ramp-up-end-rps", "5"}, "ValueError",
			"Ramp-up start and end RPS must be non-negative"},
		{[]string{"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "6", "--ramp-up-end-rps", "5"}, "ValueError",
			"Ramp-up start RPS must be less than end RPS"},
		{[]string{"--ramp-up-strategy", "exponential", "--ramp-up-start-rps", "0", "--ramp-up-end-rps", "5"}, "ValueError",
			"For exponential ramp-up, the start RPS cannot be 0."},
		{[]string{"--header", "novalue"}, "ValueError", "Invalid header format. Please use KEY=VALUE format."},
		{[]string{"--dataset-path", "x.json"}, "ValueError",
			"Cannot use 'random' dataset with --dataset-path. Please specify the appropriate --dataset-name (e.g., 'sharegpt', 'custom', 'hf') for your dataset file: x.json"},
		{[]string{"--dataset-name", "prefix_repetition", "--dataset-path", ""}, "ValueError",
			"Cannot use 'prefix_repetition' dataset with --dataset-path. Please specify the appropriate --dataset-name (e.g., 'sharegpt', 'custom', 'hf') for your dataset file: "},
		{[]string{"--self-timed"}, "ValueError", "--self-timed/--no-self-timed is only supported with --dataset-name=timed_trace"},
		{[]string{"--dataset-name", "sharegpt", "--no-self-timed"}, "ValueError", "--self-timed/--no-self-timed is only supported with --dataset-name=timed_trace"},
		{[]string{"--goodput", "ttft=5"}, "ArgumentTypeError",
			`Invalid format found for service level objectives. Specify service level objectives for goodput as "KEY:VALUE" pairs, where the key is a metric name, and the value is a number in milliseconds.`},
		{[]string{"--goodput", "ttft:fast"}, "ArgumentTypeError",
			`Invalid format found for service level objectives. Specify service level objectives for goodput as "KEY:VALUE" pairs, where the key is a metric name, and the value is a number in milliseconds.`},
		{[]string{"--goodput", "ttft:5", "itl:10"}, "ValueError",
			"Invalid metric name found, itl: 10.0. The service level objective name should be one of ['ttft', 'tpot', 'e2el']. "},
		{[]string{"--goodput", "e2el:-1e-5"}, "ValueError",
			"Invalid value found, e2el: -1e-05. The service level objective value should be non-negative."},
		{[]string{"--extra-body", "[1]"}, "TypeError", "'list' object is not a mapping"},
		{[]string{"--extra-body", "5"}, "TypeError", "'int' object is not a mapping"},
		{[]string{"--extra-body", `"x"`}, "TypeError", "'str' object is not a mapping"},
		{[]string{"--metric-percentiles", "50,x"}, "ValueError", "could not convert string to float: 'x'"},
		{[]string{"--metric-percentiles", ""}, "ValueError", "could not convert string to float: ''"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := parseArgs(tt.args, noEnv)
			var v *py.Error
			if !errors.As(err, &v) {
				t.Fatalf("parseArgs(%q) = %v, want %s", tt.args, err, tt.typ)
			}
			if v.Type != tt.typ || v.Msg != tt.msg {
				t.Errorf("got %s: %s\nwant %s: %s", v.Type, v.Msg, tt.typ, tt.msg)
			}
		})
	}
}

func TestNotSupportedYet(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--plot-dataset-stats"}, "--plot-dataset-stats needs a result file name beside which to write its figure: add --save-result, --append-result or --plot-timeline"},
		{[]string{"--max-connections-per-worker", "0"}, "argument --max-connections-per-worker: must be at least 1, got 0"},
		{[]string{"--server-urls", "http://a:1,https://b:2"}, "argument --server-urls: URL 'https://b:2' is https:// but the first is http://: the front ends must all be http:// or all https://"},
		{[]string{"--server-urls", "a:1"}, "argument --server-urls: invalid URL 'a:1': want a base URL such as http://10.0.0.5:8000"},
		{[]string{"--server-urls", "ftp://a:1"}, `argument --server-urls: URL 'ftp://a:1': scheme "ftp" is not supported (use http:// or https://)`},
		{[]string{"--server-urls", "http://u:p@a:1"}, "argument --server-urls: URL 'http://u:p@a:1': credentials in a front end's URL are not supported"},
		{[]string{"--server-urls", "http://a:1,http://a:1"}, "argument --server-urls: URL 'http://a:1' is given twice"},
	}
	for _, tt := range tests {
		_, err := parseArgs(tt.args, noEnv)
		var u *py.UsageError
		if !errors.As(err, &u) || u.Msg != tt.want {
			t.Errorf("parseArgs(%q) = %v, want usage error %q", tt.args, err, tt.want)
		}
	}
	// Built things and no-op flags pass.
	for _, args := range [][]string{
		{"--backend", "openai-chat", "--endpoint", "/v1/chat/completions"},
		{"--dataset-name", "sharegpt", "--dataset-path", "x.json"},
		{"--dataset-name", "timed_trace", "--dataset-path", "t.jsonl"},
		{"--enable-multimodal-chat"},
		{"--dataset-name", "custom", "--dataset-path", "x.jsonl", "--disable-shuffle", "--no-stream"},
		{"--dataset-name", "sonnet", "--dataset-path", "sonnet.txt"},
		{"--dataset-name", "hf", "--dataset-path", "likaixin/InstructCoder", "--hf-split", "train", "--no-stream"},
		{"--use-beam-search", "--trust-remote-code", "--tokenizer-mode", "mistral", "--probe-request-rate", "0"},
		{"--probe-request-rate", "2.5"},
		{"--max-connections-per-worker", "1296", "--warmup-time", "0"},
		{"--warmup-time", "1.5", "--cooldown-time", "3"},
		{"--plot-timeline", "--timeline-itl-thresholds", "10,20"},
		{"--profile", "--save-result", "--save-detailed", "--append-result"},
	} {
		if _, err := parseArgs(args, noEnv); err != nil {
			t.Errorf("parseArgs(%q): %v", args, err)
		}
	}
}

func TestURLs(t *testing.T) {
	tests := []struct {
		args      []string
		api, base string
	}{
		{nil, "http://127.0.0.1:8000/v1/completions", "http://127.0.0.1:8000"},
		{[]string{"--host", "::1", "--port", "9000"}, "http://[::1]:9000/v1/completions", "http://[::1]:9000"},
		{[]string{"--host", "fe80::1%eth0"}, "http://[fe80::1%eth0]:8000/v1/completions", "http://[fe80::1%eth0]:8000"},
		{[]string{"--host", "[::1]"}, "http://[::1]:8000/v1/completions", "http://[::1]:8000"},
		{[]string{"--host", "localhost", "--endpoint", "v1/x"}, "http://localhost:8000v1/x", "http://localhost:8000"},
		{[]string{"--base-url", "https://h.example/", "--endpoint", "/v1/completions", "--host", "ignored"},
			"https://h.example//v1/completions", "https://h.example/"},
		{[]string{"--base-url", ""}, "/v1/completions", ""},
	}
	for _, tt := range tests {
		c := mustParse(t, tt.args...)
		if c.APIURL != tt.api || c.BaseURL != tt.base {
			t.Errorf("%q: api %q base %q, want %q %q", tt.args, c.APIURL, c.BaseURL, tt.api, tt.base)
		}
	}
}

func TestHeaders(t *testing.T) {
	c := mustParse(t, "--header", " X-A = 1 ", "b==2=", "X-A=3", "empty=")
	want := []plan.Header{{Key: "X-A", Value: "3"}, {Key: "b", Value: "=2="}, {Key: "empty", Value: ""}}
	if len(c.Headers) != len(want) {
		t.Fatalf("headers %v, want %v", c.Headers, want)
	}
	for i := range want {
		if c.Headers[i] != want[i] {
			t.Errorf("header %d = %v, want %v", i, c.Headers[i], want[i])
		}
	}
	if c := mustParse(t, "--header"); c.Headers != nil {
		t.Errorf("empty --header gave %v, want none", c.Headers)
	}
}

func TestDatasetRewrites(t *testing.T) {
	c := mustParse(t, "--input-len", "300", "--output-len", "40")
	if c.RandomInputLen != 300 || c.RandomOutputLen != 40 || *c.SharegptOutputLen != 40 || c.CustomOutputLen != 40 ||
		*c.HFOutputLen != 40 || c.SpecBenchOutputLen != 40 || c.PrefixRepetitionOutputLen != 40 {
		t.Errorf("--input-len/--output-len not copied: %+v", c.Flags)
	}
	if c.SonnetOutputLen != 150 || c.SpeedBenchOutputLen != 4096 {
		t.Errorf("--output-len must not reach sonnet/speed_bench")
	}
	tests := []struct {
		args      []string
		ignoreEOS bool
	}{
		{nil, true},
		{[]string{"--backend", "openai-chat"}, true},
		{[]string{"--dataset-name", "sharegpt", "--dataset-path", "x"}, false},
		{[]string{"--dataset-name", "sharegpt", "--dataset-path", "x", "--ignore-eos"}, true},
		{[]string{"--dataset-name", "prefix_repetition"}, false},
	}
	for _, tt := range tests {
		if c := mustParse(t, tt.args...); c.IgnoreEOS != tt.ignoreEOS || c.SelfTimed {
			t.Errorf("%q: ignore_eos %v self_timed %v, want %v false", tt.args, c.IgnoreEOS, c.SelfTimed, tt.ignoreEOS)
		}
	}
}

func TestTimedTraceRules(t *testing.T) {
	tests := []struct {
		args      []string
		selfTimed bool
		err       string
	}{
		{[]string{"--backend", "vllm"}, true, ""},
		{[]string{"--no-self-timed"}, false, ""},
		{[]string{"--no-self-timed", "--self-timed"}, true, ""},
		{[]string{"--backend", "openai-chat"}, false,
			"timed_trace dataset passes pre-tokenized prompts (list[int]) and requires a completions backend ('vllm' or 'openai')."},
	}
	for _, tt := range tests {
		c, err := parseFlags(append([]string{"--dataset-name", "timed_trace", "--dataset-path", "t.jsonl"}, tt.args...), testBackends)
		if err != nil {
			t.Fatal(err)
		}
		err = c.validate()
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%q: error %v, want %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil || c.SelfTimed != tt.selfTimed || !c.IgnoreEOS {
			t.Errorf("%q: self_timed %v ignore_eos %v err %v, want %v true", tt.args, c.SelfTimed, c.IgnoreEOS, err, tt.selfTimed)
		}
	}
}

func TestSamplingAndExtraBody(t *testing.T) {
	tests := []struct {
		args     []string
		sampling string
		body     string
		warn     bool
	}{
		{nil, `{}`, `{}`, true},
		{[]string{"--repetition-penalty", "1", "--temperature", "0", "--top-k", "5", "--top-p", "0.9"},
			`{"top_p":0.9,"top_k":5,"temperature":0.0,"repetition_penalty":1.0}`,
			`{"top_p":0.9,"top_k":5,"temperature":0.0,"repetition_penalty":1.0}`, false},
		{[]string{"--min-p", "1e-5", "--frequency-penalty", "inf", "--presence-penalty", "-2", "--extra-body", `{"z": 1, "min_p": 0.2}`},
			`{"min_p":1e-05,"frequency_penalty":Infinity,"presence_penalty":-2.0}`,
			`{"min_p":0.2,"frequency_penalty":Infinity,"presence_penalty":-2.0,"z":1}`, true},
		{[]string{"--extra-body", "null", "--temperature", "0.5"}, `{"temperature":0.5}`, `{"temperature":0.5}`, false},
		{[]string{"--extra-body", "[]"}, `{}`, `{}`, true},
		{[]string{"--extra-body.chat_template_kwargs.enable_thinking", "false", "--extra-body.max_tokens", "8"},
			`{}`, `{"chat_template_kwargs":{"enable_thinking":false},"max_tokens":8}`, true},
	}
	for _, tt := range tests {
		c := mustParse(t, tt.args...)
		// MarshalJSON directly: Python's json writes Infinity, which
		// encoding/json refuses to pass through.
		sampling, _ := c.SamplingParams.MarshalJSON()
		body, _ := c.RequestExtraBody.MarshalJSON()
		if string(sampling) != tt.sampling || string(body) != tt.body || c.WarnDefaultTemperature != tt.warn {
			t.Errorf("%q:\n sampling %s body %s warn %v\nwant     %s body %s warn %v",
				tt.args, sampling, body, c.WarnDefaultTemperature, tt.sampling, tt.body, tt.warn)
		}
	}
	if !strings.HasPrefix(plan.TemperatureWarning, "WARNING: vllm bench serve no longer sets temperature==0") ||
		!strings.HasSuffix(plan.TemperatureWarning, "For the old behavior, include --temperature=0.") {
		t.Errorf("plan.TemperatureWarning = %q", plan.TemperatureWarning)
	}
}

func TestPoolingBackendSamplingRules(t *testing.T) {
	// Pooling backends are refused as not built, so exercise the rules on
	// a parsed config directly.
	c, err := parseFlags([]string{"--backend", "openai-embeddings", "--temperature", "0.5", "--extra-body", `{"a": 1}`}, testBackends)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(c.RequestExtraBody)
	if c.TaskType != plan.Pooling || c.SamplingParams.Len() != 0 || string(body) != `{"a":1}` || c.WarnDefaultTemperature {
		t.Errorf("pooling: task %v sampling %v body %s warn %v", c.TaskType, c.SamplingParams, body, c.WarnDefaultTemperature)
	}
	if strings.Join(c.SelectedPercentileMetrics, ",") != "e2el" {
		t.Errorf("pooling default percentile metrics %q", c.SelectedPercentileMetrics)
	}
	c, err = parseFlags([]string{"--backend", "openai-audio", "--top-k", "3"}, testBackends)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.validate(); err == nil || err.Error() != "Sampling parameters are only supported by openai-compatible backends." {
		t.Errorf("audio with sampling params: %v", err)
	}
}

func TestPercentileSettings(t *testing.T) {
	c := mustParse(t)
	if strings.Join(c.SelectedPercentileMetrics, ",") != "ttft,tpot,itl" || len(c.SelectedPercentiles) != 1 || c.SelectedPercentiles[0] != 99 {
		t.Errorf("defaults: %q %v", c.SelectedPercentileMetrics, c.SelectedPercentiles)
	}
	c = mustParse(t, "--percentile-metrics", "e2el,bogus", "--metric-percentiles", "50, 99.9,100")
	if strings.Join(c.SelectedPercentileMetrics, ",") != "e2el,bogus" || len(c.SelectedPercentiles) != 3 || c.SelectedPercentiles[1] != 99.9 {
		t.Errorf("given: %q %v", c.SelectedPercentileMetrics, c.SelectedPercentiles)
	}
	// The unknown name stays (Python ignores it) and is warned of, with
	// the accepted names; the known ones are not.
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], `unknown metric "bogus"`) ||
		!strings.Contains(c.Warnings[0], "accepted: ttft, tpot, itl, e2el, client_queue_time, e2el_including_client_queue") {
		t.Errorf("warnings %q, want one naming bogus and the accepted names", c.Warnings)
	}
	if c = mustParse(t, "--percentile-metrics", "ttft,e2el,itl"); len(c.Warnings) != 0 {
		t.Errorf("warnings for known names: %q", c.Warnings)
	}
	c = mustParse(t, "--goodput", "ttft:100", "e2el:2e3", "ttft:50")
	want := []plan.GoodputSLO{{Metric: "ttft", ValueMs: 50}, {Metric: "e2el", ValueMs: 2000}}
	if len(c.GoodputSLOs) != 2 || c.GoodputSLOs[0] != want[0] || c.GoodputSLOs[1] != want[1] {
		t.Errorf("goodput %v, want %v", c.GoodputSLOs, want)
	}
}

func TestTimelineThresholds(t *testing.T) {
	tests := []struct {
		value string
		err   string
	}{
		{" 10 , 20", ""},
		{"25", "Invalid --timeline-itl-thresholds format: Expected 2 ITL threshold values, got 1"},
		{"1,2,3", "Invalid --timeline-itl-thresholds format: Expected 2 ITL threshold values, got 3"},
		{"1,x", "Invalid --timeline-itl-thresholds format: could not convert string to float: 'x'"},
	}
	for _, tt := range tests {
		c, err := parseFlags([]string{"--plot-timeline", "--timeline-itl-thresholds", tt.value}, testBackends)
		if err != nil {
			t.Fatal(err)
		}
		err = c.validate()
		switch {
		case tt.err == "" && (err != nil || len(c.TimelineITLThresholdsMs) != 2 || c.TimelineITLThresholdsMs[1] != 20):
			t.Errorf("%q: %v %v", tt.value, c.TimelineITLThresholdsMs, err)
		case tt.err != "" && (err == nil || err.Error() != tt.err):
			t.Errorf("%q: error %v, want %q", tt.value, err, tt.err)
		}
	}
}

func TestEnvironment(t *testing.T) {
	env := map[string]string{"OPENAI_API_KEY": "sk-1", "SAVE_TO_PYTORCH_BENCHMARK_FORMAT": "1"}
	c, err := parseArgs(nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if c.APIKey != "sk-1" || !c.SaveToPyTorchFormat {
		t.Errorf("env: key %q pytorch %v", c.APIKey, c.SaveToPyTorchFormat)
	}
}

func TestWorkerProcesses(t *testing.T) {
	if got := mustParse(t).WorkerProcesses(100); got != 0 {
		t.Errorf("without the flag: %d workers", got)
	}
	tests := []struct{ k, n, want int }{{1296, 32400, 25}, {10, 5, 1}, {10, 0, 1}, {3, 10, 4}}
	for _, tt := range tests {
		c := mustParse(t, "--max-connections-per-worker", itoa(tt.k))
		if got := c.WorkerProcesses(tt.n); got != tt.want {
			t.Errorf("K=%d n=%d: %d workers, want %d", tt.k, tt.n, got, tt.want)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// FuzzBucketConfig checks the Python literal reader never panics.
func FuzzBucketConfig(f *testing.F) {
	for _, seed := range []string{"{(256, 256, 1): 0.5, (720, 1280, 16): 0.0}", `{"(1,2,3)": '1'}`, "{(1,2,3): -1e-3,}", "((((", "'\\x4"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var c BucketConfig
		_ = c.UnmarshalFlag(s)
	})
}

// TestClusterTokenNotInArgs keeps --cluster-token out of the record of the
// run's arguments (the PyTorch benchmark file's args).
func TestClusterTokenNotInArgs(t *testing.T) {
	p := mustParse(t, "--cluster-token", "s3cret-value")
	if got := p.Args.Value("cluster_token"); got != "<redacted>" {
		t.Errorf("args' cluster_token = %v, want <redacted>", got)
	}
	if p.ClusterToken != "s3cret-value" {
		t.Errorf("the plan lost the token: %q", p.ClusterToken)
	}
}

// The result's args hold the two lists as JSON lists of strings.
func TestFrontEndOptionsInArgs(t *testing.T) {
	c := mustParse(t, "--source-addresses", "127.0.0.2-127.0.0.3", "--server-urls", "http://a:1,http://b:2")
	raw, err := py.Dumps(&c.Args)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"source_addresses": ["127.0.0.2", "127.0.0.3"]`, `"server_urls": ["http://a:1", "http://b:2"]`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("args lack %s:\n%s", want, raw)
		}
	}
}
