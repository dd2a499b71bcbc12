package cli

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/internal/py"
)

func usageMsg(t *testing.T, args []string) string {
	t.Helper()
	_, err := parseFlags(args, testBackends)
	var u *py.UsageError
	if !errors.As(err, &u) {
		t.Fatalf("parseFlags(%q) = %v, want a usage error", args, err)
	}
	return u.Msg
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--dataset", "x"}, "ambiguous option: --dataset could match --dataset-name, --dataset-path"},
		{[]string{"--dataset=x"}, "ambiguous option: --dataset=x could match --dataset-name, --dataset-path"},
		{[]string{"--no"}, "ambiguous option: --no could match --no-stream, --no-oversample, --no-reranker, --no-self-timed"},
		{[]string{"--max-con", "x"}, "argument --max-concurrency: invalid int value: 'x'"},
		{[]string{"--num-prompts", "1.5"}, "argument --num-prompts: invalid int value: '1.5'"},
		{[]string{"--num-prompts", "0x10"}, "argument --num-prompts: invalid int value: '0x10'"},
		{[]string{"--num-prompts", "1e3"}, "argument --num-prompts: invalid int value: '1e3'"},
		{[]string{"--request-rate", "fast"}, "argument --request-rate: invalid float value: 'fast'"},
		{[]string{"--request-rate", "1__0"}, "argument --request-rate: invalid float value: '1__0'"},
		{[]string{"--label", "it's"}, ""},
		{[]string{"--seed", "it's"}, `argument --seed: invalid int value: "it's"`},
		{[]string{"--save-result=true"}, "argument --save-result: ignored explicit argument 'true'"},
		{[]string{"--save-result="}, "argument --save-result: ignored explicit argument ''"},
		{[]string{"--self-timed=1"}, "argument --self-timed/--no-self-timed: ignored explicit argument '1'"},
		{[]string{"-hx"}, "argument -h/--help: ignored explicit argument 'x'"},
		{[]string{"--extra-body", "{bad"}, "argument --extra-body: invalid loads value: '{bad'"},
		{[]string{"--chat-template-kwargs", "{'a': 1}"}, `argument --chat-template-kwargs: invalid loads value: "{'a': 1}"`},
		{[]string{"--random-mm-limit-mm-per-prompt", ""}, "argument --random-mm-limit-mm-per-prompt: invalid loads value: ''"},
		{[]string{"--random-mm-bucket-config", "{(1, 2): 1}"}, "argument --random-mm-bucket-config: invalid _parse_mm_bucket_config value: '{(1, 2): 1}'"},
		{[]string{"--random-mm-bucket-config", "[1]"}, "argument --random-mm-bucket-config: invalid _parse_mm_bucket_config value: '[1]'"},
		{[]string{"--backend", "tgi"}, "argument --backend: invalid choice: 'tgi' (choose from 'vllm', 'openai', 'openai-chat', 'openai-audio', 'openai-embeddings', 'openai-embeddings-chat', 'openai-embeddings-clip', 'openai-embeddings-vlm2vec', 'infinity-embeddings', 'infinity-embeddings-clip', 'vllm-pooling', 'vllm-rerank', 'openai-responses', 'anthropic-messages')"},
		{[]string{"--ramp-up-strategy", "step"}, "argument --ramp-up-strategy: invalid choice: 'step' (choose from 'linear', 'exponential')"},
		{[]string{"--foo"}, "unrecognized arguments: --foo"},
		{[]string{"--foo=1", "stray", "--seed", "1", "-x"}, "unrecognized arguments: --foo=1 stray -x"},
		{[]string{"-5"}, "unrecognized arguments: -5"},
		{[]string{"--seed"}, "argument --seed: expected one argument"},
		{[]string{"--seed", "--num-prompts", "3"}, "argument --seed: expected one argument"},
		{[]string{"--goodput"}, "argument --goodput: expected at least one argument"},
		{[]string{"--goodput", "--seed", "1"}, "argument --goodput: expected at least one argument"},
		{[]string{"--lora-modules", "--", "a"}, "argument --lora-modules: expected at least one argument"},
		{[]string{"--seed", "1", "--", "x"}, "unrecognized arguments: x"},
		{[]string{"--extra-body.temperature"}, "argument --extra-body.temperature: expected one argument"},
		{[]string{"--seed.x", "1"}, `argument --seed: invalid int value: '{"x": 1}'`},
		{[]string{"--cpus", "3-1"}, "argument --cpus: invalid CPU list value: '3-1'"},
		{[]string{"--source-addresses", "127.0.0.x"}, `argument --source-addresses: invalid address list value: '127.0.0.x': malformed address "127.0.0.x": want an IP address such as 127.0.0.2, or a range such as 127.0.0.2-127.0.0.9`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			if tt.want == "" {
				if _, err := parseFlags(tt.args, testBackends); err != nil {
					t.Fatalf("parseFlags(%q): %v", tt.args, err)
				}
				return
			}
			if got := usageMsg(t, tt.args); got != tt.want {
				t.Errorf("error\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func mustParseFlags(t *testing.T, args ...string) *plan.Plan {
	t.Helper()
	c, err := parseFlags(args, testBackends)
	if err != nil {
		t.Fatalf("parseFlags(%q): %v", args, err)
	}
	return c.Plan
}

func TestDefaults(t *testing.T) {
	c := mustParseFlags(t)
	switch {
	case c.Seed != 0 || c.NumPrompts != 1000 || c.DatasetName != "random" || c.Backend != "openai":
		t.Errorf("defaults: seed %d prompts %d dataset %q backend %q", c.Seed, c.NumPrompts, c.DatasetName, c.Backend)
	case c.Host != "127.0.0.1" || c.Port != 8000 || c.Endpoint != "/v1/completions":
		t.Errorf("defaults: host %q port %d endpoint %q", c.Host, c.Port, c.Endpoint)
	case !math.IsInf(c.RequestRate, 1) || c.Burstiness != 1 || c.MetricPercentiles != "99":
		t.Errorf("defaults: rate %v burstiness %v percentiles %q", c.RequestRate, c.Burstiness, c.MetricPercentiles)
	case c.MaxConcurrency != nil || c.Label != nil || c.Temperature != nil || c.Header != nil:
		t.Errorf("defaults: None-valued flags were set")
	case c.RandomInputLen != 1024 || c.RandomOutputLen != 128 || c.RandomRangeRatio != "0.0" || c.RandomBatchSize != 1:
		t.Errorf("defaults: random %d/%d %q %d", c.RandomInputLen, c.RandomOutputLen, c.RandomRangeRatio, c.RandomBatchSize)
	case c.SonnetInputLen != 550 || c.CustomOutputLen != 256 || c.SpeedBenchOutputLen != 4096 || c.PrefixRepetitionNumPrefixes != 10:
		t.Errorf("defaults: dataset lengths")
	case !math.IsInf(c.ASRMaxAudioLenSec, 1) || c.TimedTraceSecMultiplier != 1 || c.TimedTraceLabelHashIDs != "hash_ids":
		t.Errorf("defaults: asr/timed trace")
	case string(c.RandomMMLimitMMPerPrompt) != `{"image":255,"video":1}`:
		t.Errorf("defaults: limit-mm-per-prompt %s", c.RandomMMLimitMMPerPrompt)
	case len(c.RandomMMBucketConfig) != 3 || c.RandomMMBucketConfig[2] != (MMBucket{Height: 720, Width: 1280, Frames: 16, Probability: 0}):
		t.Errorf("defaults: bucket config %v", c.RandomMMBucketConfig)
	case c.RequestTimeoutSec != 21600 || c.ConnectTimeoutSec != 30 || c.CancelGraceSec != 5 || c.Shards != 0:
		t.Errorf("defaults: stampede options")
	case c.MaxResponseBytes != 1<<30 || c.MaxBufferedBytes != 32<<20:
		t.Errorf("defaults: --max-response-bytes %d, --max-buffered-bytes %d", c.MaxResponseBytes, c.MaxBufferedBytes)
	}
	if !requestIDPrefix.MatchString(c.RequestIDPrefix) {
		t.Errorf("default request id prefix %q, want bench-<8 hex>-", c.RequestIDPrefix)
	}
}

func TestParsingRules(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		check func(c *plan.Plan) bool
	}{
		{"underscores", []string{"--num_prompts", "5", "--random_input-len=7"},
			func(c *plan.Plan) bool { return c.NumPrompts == 5 && c.RandomInputLen == 7 }},
		{"underscore value untouched", []string{"--model=org/my_model", "--label", "a_b"},
			func(c *plan.Plan) bool { return c.Model == "org/my_model" && *c.Label == "a_b" }},
		{"abbreviation", []string{"--num-prom", "10", "--tem=0.5"},
			func(c *plan.Plan) bool { return c.NumPrompts == 10 && *c.Temperature == 0.5 }},
		{"exact match beats longer names", []string{"--model", "m", "--host", "h"},
			func(c *plan.Plan) bool { return c.Model == "m" && c.Host == "h" }},
		{"last wins", []string{"--seed", "1", "--seed=2", "--see", "3"},
			func(c *plan.Plan) bool { return c.Seed == 3 }},
		{"python numbers", []string{"--num-prompts", " 1_000 ", "--request-rate", "1e3", "--burstiness", "Infinity", "--seed", "+7"},
			func(c *plan.Plan) bool {
				return c.NumPrompts == 1000 && c.RequestRate == 1000 && math.IsInf(c.Burstiness, 1) && c.Seed == 7
			}},
		{"nan", []string{"--top-p", "nan"}, func(c *plan.Plan) bool { return math.IsNaN(*c.TopP) }},
		{"negative numbers are values", []string{"--seed", "-5", "--temperature", "-0.5", "--top-p", "-.5"},
			func(c *plan.Plan) bool { return c.Seed == -5 && *c.Temperature == -0.5 && *c.TopP == -0.5 }},
		{"nargs star", []string{"--header", "a=1", "b=2", "--seed", "1"},
			func(c *plan.Plan) bool { return len(c.Header) == 2 && c.Header[1] == "b=2" && c.Seed == 1 }},
		{"nargs star empty", []string{"--header", "--seed", "1"},
			func(c *plan.Plan) bool { return c.Header == nil && c.Given("header") }},
		{"nargs star last wins", []string{"--metadata", "a=1", "b=2", "--metadata", "c=3"},
			func(c *plan.Plan) bool { return len(c.Metadata) == 1 && c.Metadata[0] == "c=3" }},
		{"nargs plus takes negative numbers", []string{"--goodput", "ttft:5", "-1", "--seed", "2"},
			func(c *plan.Plan) bool { return len(c.Goodput) == 2 && c.Goodput[1] == "-1" && c.Seed == 2 }},
		{"nargs with equals", []string{"--lora-modules=a", "b"},
			func(c *plan.Plan) bool { return false }},
		{"self-timed tri-state off", []string{"--self-timed", "--no-self-timed"},
			func(c *plan.Plan) bool { return c.SelfTimedOff && !c.SelfTimedOn }},
		{"self-timed tri-state on", []string{"--no-self-timed", "--self"},
			func(c *plan.Plan) bool { return c.SelfTimedOn && !c.SelfTimedOff }},
		{"json", []string{"--extra-body", ` {"b": 1, "a": {"x": [1, 2.50]}, "b": 3} `},
			func(c *plan.Plan) bool { return string(c.ExtraBody) == `{"b":3,"a":{"x":[1,2.50]}}` }},
		{"json nan", []string{"--extra-body", `{"x": NaN, "y": -Infinity}`},
			func(c *plan.Plan) bool { return string(c.ExtraBody) == `{"x":NaN,"y":-Infinity}` }},
		{"dotted", []string{"--extra-body.temperature", "0.5", "--extra_body.chat_template_kwargs.enable_thinking", "false"},
			func(c *plan.Plan) bool {
				return string(c.ExtraBody) == `{"temperature":0.5,"chat_template_kwargs":{"enable_thinking":false}}`
			}},
		{"dotted replaces explicit", []string{"--extra-body.a=1", "--extra-body", `{"b": 2}`},
			func(c *plan.Plan) bool { return string(c.ExtraBody) == `{"a":1}` }},
		{"dotted list append", []string{"--extra-body.stop+", "a,b", "--extra-body.stop+=c"},
			func(c *plan.Plan) bool { return string(c.ExtraBody) == `{"stop":["a","b","c"]}` }},
		{"dotted human int and raw string", []string{"--extra-body.n", "1k", "--extra-body.m", "2K", "--extra-body.s", "hello"},
			func(c *plan.Plan) bool { return string(c.ExtraBody) == `{"n":1000,"m":2048,"s":"hello"}` }},
		{"dotted abbreviation", []string{"--extra.x", "1"},
			func(c *plan.Plan) bool { return string(c.ExtraBody) == `{"x":1}` }},
		{"dotted into a string flag", []string{"--label.a", "1.50"},
			func(c *plan.Plan) bool { return *c.Label == `{"a": 1.5}` }},
		{"dotted values re-spelled as json.dumps", []string{"--label.a", "é😀", "--label.b", "1e3", "--label.c", "-0", "--label.d", "[1.50, null]"},
			func(c *plan.Plan) bool {
				return *c.Label == `{"a": "\u00e9\ud83d\ude00", "b": 1000.0, "c": 0, "d": [1.5, null]}`
			}},
		{"equals value with a dot", []string{"--request-rate=0.5"},
			func(c *plan.Plan) bool { return c.RequestRate == 0.5 }},
		{"bucket config", []string{"--random-mm-bucket-config", `{"(256,256,1)": 1, (720, 1280, 16): '0.25'}`},
			func(c *plan.Plan) bool {
				return len(c.RandomMMBucketConfig) == 2 &&
					c.RandomMMBucketConfig[0] == MMBucket{Height: 256, Width: 256, Frames: 1, Probability: 1} && c.RandomMMBucketConfig[1] == MMBucket{Height: 720, Width: 1280, Frames: 16, Probability: 0.25}
			}},
		{"bfcl categories", []string{"--bfcl-categories", "a,,b"},
			func(c *plan.Plan) bool { return len(c.BFCLCategories) == 2 }},
		{"choice", []string{"--speed-bench-dataset-subset", "throughput_8k", "--lora-assignment", "round-robin"},
			func(c *plan.Plan) bool {
				return c.SpeedBenchDatasetSubset == "throughput_8k" && c.LoraAssignment == "round-robin"
			}},
		{"cpus", []string{"--cpus", "0-2,5"},
			func(c *plan.Plan) bool { return len(c.CPUs) == 4 && c.CPUs[3] == 5 }},
		{"request id prefix given", []string{"--request-id-prefix", ""},
			func(c *plan.Plan) bool { return c.RequestIDPrefix == "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseFlags(tt.args, testBackends)
			if tt.name == "nargs with equals" {
				// An explicit value is the only value: "b" is left over.
				var u *py.UsageError
				if !errors.As(err, &u) || u.Msg != "unrecognized arguments: b" {
					t.Fatalf("got %v, want unrecognized arguments: b", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseFlags(%q): %v", tt.args, err)
			}
			if !tt.check(c.Plan) {
				t.Errorf("parseFlags(%q) gave %+v", tt.args, *c.Plan)
			}
		})
	}
}

func TestDuplicateKeyWarning(t *testing.T) {
	c := mustParseFlags(t, "--seed", "1", "--seed", "2", "--extra-body.a", "1", "--extra-body.a", "2", "--num_prompts=1", "--num-prompts", "2")
	want := []string{"Found duplicate keys --seed, --extra-body.a, --num-prompts"}
	if strings.Join(c.Warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings %q, want %q", c.Warnings, want)
	}
	if c := mustParseFlags(t, "--seed", "1"); len(c.Warnings) != 0 {
		t.Errorf("warnings %q without duplicates", c.Warnings)
	}
}

func TestHelpRequests(t *testing.T) {
	tests := []struct {
		args    []string
		keyword string
	}{
		{[]string{"-h"}, ""},
		{[]string{"--help"}, ""},
		{[]string{"--hel"}, ""},
		{[]string{"--foo", "--help"}, ""},
		{[]string{"--help=Random_Input"}, "random_input"},
	}
	for _, tt := range tests {
		_, err := parseFlags(tt.args, testBackends)
		var h *HelpRequested
		if !errors.As(err, &h) || h.Keyword != tt.keyword {
			t.Errorf("parseFlags(%q) = %v, want help %q", tt.args, err, tt.keyword)
		}
	}
	// Errors before the help option win, as argparse acts in order.
	if got := usageMsg(t, []string{"--seed", "x", "--help"}); got != "argument --seed: invalid int value: 'x'" {
		t.Errorf("got %q", got)
	}
}

func TestParsePyInt(t *testing.T) {
	good := map[string]int64{"0": 0, "007": 7, "-12": -12, "+3": 3, "1_000": 1000, " 42\n": 42}
	for in, want := range good {
		if got, err := parsePyInt(in); err != nil || got != want {
			t.Errorf("parsePyInt(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "1.5", "1e3", "0x10", "_1", "1_", "1__0", "--1", "inf", "１"} {
		if _, err := parsePyInt(in); err == nil {
			t.Errorf("parsePyInt(%q) accepted", in)
		}
	}
}

func TestHumanReadableInt(t *testing.T) {
	tests := map[string]int64{"1k": 1000, "25.6k": 25600, "1K": 1024, "2M": 2 << 20, "3g": 3e9, "12": 12, "+5": 5}
	for in, want := range tests {
		if got, ok := parseHumanReadableInt(in); !ok || got != want {
			t.Errorf("parseHumanReadableInt(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"1.5K", "k", "1kb", "x"} {
		if _, ok := parseHumanReadableInt(in); ok {
			t.Errorf("parseHumanReadableInt(%q) accepted", in)
		}
	}
}

func TestDashName(t *testing.T) {
	tests := map[string]string{
		"--num_prompts":                "--num-prompts",
		"--extra_body.chat_template_x": "--extra-body.chat_template_x",
		"--a_b.c_d.e_f":                "--a-b.c_d.e_f",
		"--x":                          "--x",
	}
	for in, want := range tests {
		if got := dashName(in); got != want {
			t.Errorf("dashName(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParseArgs(f *testing.F) {
	for _, seed := range []string{
		"--seed 1", "--extra-body.a.b+ x,y", "--num_prom=3 --header a=b c", "--random-mm-bucket-config {(1,2,3):0.5}",
		"--goodput ttft:1 -5", "--extra-body {\"a\":[1,{\"b\":NaN}]}", "-h", "--dataset", "-- --seed",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, " ")
		_, err := parseArgs(args, func(string) string { return "" })
		var (
			u *py.UsageError
			v *py.Error
			h *HelpRequested
		)
		if err != nil && !errors.As(err, &u) && !errors.As(err, &v) && !errors.As(err, &h) {
			t.Fatalf("parseArgs(%q): untyped error %v", args, err)
		}
	})
}

func TestByteLimitsRejectNegative(t *testing.T) {
	for _, flag := range []string{"--max-response-bytes", "--max-buffered-bytes"} {
		_, err := parseArgs([]string{flag, "-1"}, noEnv)
		var ue *py.UsageError
		if !errors.As(err, &ue) || ue.Msg != "argument "+flag+": invalid value -1: want a number of bytes, or 0 for no limit" {
			t.Errorf("%s -1: %v; want a usage error naming the flag", flag, err)
		}
		c, err := parseArgs([]string{flag, "0"}, noEnv)
		if err != nil || c.MaxResponseBytes < 0 || c.MaxBufferedBytes < 0 {
			t.Errorf("%s 0 (no limit): %v", flag, err)
		}
	}
}
