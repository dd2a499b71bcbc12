package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// errorLine matches the line an error is reported on: a Python exception
// ("ValueError: ..."), or the program's own ("stampede serve: ...").
var errorLine = regexp.MustCompile(`^(\w+Error: |stampede serve: )`)

// firstErrorLine is the first line of stderr that reports an error,
// skipping log lines and the usage line before it.
func firstErrorLine(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		if errorLine.MatchString(l) {
			return l
		}
	}
	return ""
}

// TestBadInputs runs the command on bad files, flags, environment and
// server answers, and holds each to its exit code and the first line of
// its error: it says what is wrong, where (file, line, field, flag), and
// what would be accepted, in the user's terms rather than Go's. {file} in
// a want stands for the input file's path, {server} for the server's URL.
func TestBadInputs(t *testing.T) {
	t.Setenv("HF_HUB_OFFLINE", "1")
	t.Setenv("OPENAI_API_KEY", "")
	models := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			io.WriteString(w, `{"data": {"id": "m"}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer models.Close()
	const objectPerLine = `want one JSON object per line, such as {"prompt": "..."}`
	const shareGPTShape = `want a JSON list of entries such as {"conversations": [{"from": "human", "value": "..."}, {"from": "gpt", "value": "..."}]}`
	custom := []string{"--dataset-name", "custom", "--skip-chat-template"}
	tests := []struct {
		name    string
		file    string // file name; its content is data
		data    string
		args    []string
		env     map[string]string
		noModel bool // leave --model out, so the server is asked
		// noTokenizer leaves --tokenizer out: no hub, and the server has
		// no /tokenize.
		noTokenizer bool
		code        int
		want        string
		// also is a later line of stderr, when the first does not say it all.
		also string
	}{
		{name: "custom: a list on a line", file: "d.jsonl", data: "{\"prompt\": \"a\"}\n[1, 2]\n", args: custom, code: 1,
			want: "ValueError: dataset custom: {file} line 2: found an array; " + objectPerLine},
		{name: "custom: cut-off line", file: "d.jsonl", data: "{\"prompt\": \"a\"}\n{\"prompt\": \n", args: custom, code: 1,
			want: "ValueError: dataset custom: {file} line 2: the JSON ends early (an unclosed bracket, brace or string?); " + objectPerLine},
		{name: "custom: not JSON", file: "d.jsonl", data: "\n\nprompt: a\n", args: custom, code: 1,
			want: "ValueError: dataset custom: {file} line 3: not valid JSON at column 1: character 'p' looking for beginning of value; " + objectPerLine},
		{name: "custom: no prompt", file: "d.jsonl", data: "{\"text\": \"a\"}\n", args: custom, code: 1,
			want: "ValueError: JSONL file must contain a 'prompt' column. (No line of {file} has a \"prompt\" field; each line must be an object such as {\"prompt\": \"...\"}.)"},
		{name: "custom: prompt not a string", file: "d.jsonl", data: "{\"prompt\": {\"x\": 1}}\n", args: custom, code: 1,
			want: "ValueError: dataset custom {file} line 1: \"prompt\" must be a string, got {\"x\": 1}"},
		{name: "custom: a line without prompt", file: "d.jsonl", data: "{\"prompt\": \"a\"}\n\n{\"text\": \"b\"}\n",
			args: append([]string{"--disable-shuffle", "--num-prompts", "2"}, custom...), code: 1,
			want: "ValueError: dataset custom {file} line 3 has no \"prompt\" field (each line must be an object such as {\"prompt\": \"...\"})"},
		{name: "custom: prompt null", file: "d.jsonl", data: "{\"prompt\": null}\n", args: custom, code: 1,
			want: "ValueError: dataset custom {file} line 1: \"prompt\" must be a string, got null"},
		{name: "custom: missing file, tokenizer without a chat template", args: []string{"--dataset-name", "custom", "--dataset-path", "nope.jsonl"}, code: 1,
			want: "FileNotFoundError: dataset custom: --dataset-path nope.jsonl: no such file or directory"},
		{name: "custom: bad output_tokens", file: "d.jsonl", data: "{\"prompt\": \"a\", \"output_tokens\": 2}\n{\"prompt\": \"b\", \"output_tokens\": \"x\"}\n",
			args: append([]string{"--custom-output-len", "-1", "--disable-shuffle", "--num-prompts", "2"}, custom...), code: 1,
			want: "ValueError: Invalid value for 'output_tokens' in custom dataset: 'x'. Must be an integer. ({file} line 2)"},
		{name: "custom: not .jsonl", file: "d.json", data: "{}", args: custom, code: 1,
			want: "NotImplementedError: Only JSONL format is supported for CustomDataset."},
		{name: "sharegpt: an object", file: "s.json", data: `{"conversations": []}`, args: []string{"--dataset-name", "sharegpt"}, code: 1,
			want: "ValueError: dataset sharegpt {file}: found an object; " + shareGPTShape},
		{name: "sharegpt: conversations not a list", file: "s.json", data: `[{"conversations": {"a": 1}}]`, args: []string{"--dataset-name", "sharegpt"}, code: 1,
			want: "ValueError: dataset sharegpt {file}: entry 0 (from 0): field \"conversations\" must be a list, found an object"},
		{name: "sharegpt: value a number", file: "s.json", data: `[{"conversations": [{"value": 1}, {"value": "x"}]}]`, args: []string{"--dataset-name", "sharegpt"}, code: 1,
			want: "ValueError: dataset sharegpt {file}: entry 0 (from 0): field \"conversations.value\" must be a string, found a number"},
		{name: "sharegpt: cut off", file: "s.json", data: "[\n{\"conversations\": [\n", args: []string{"--dataset-name", "sharegpt"}, code: 1,
			want: "ValueError: dataset sharegpt {file}: the JSON ends early (an unclosed bracket, brace or string?); " + shareGPTShape},
		{name: "burstgpt: stray quote", file: "b.csv", data: "Model,Request tokens,Response tokens,X\nGPT-4,1\"2,3,4\n", args: []string{"--dataset-name", "burstgpt"}, code: 1,
			want: "ValueError: dataset burstgpt {file} line 2, column 8: a '\"' inside a field that does not start with one; quote the whole field and write the inner quote twice (\"a \"\"b\"\" c\")"},
		{name: "burstgpt: three columns", file: "b.csv", data: "Model,Request tokens,Response tokens\nGPT-4,2,3\n", args: []string{"--dataset-name", "burstgpt"}, code: 1,
			want: "IndexError: list index out of range (burstgpt reads the request tokens from the 3rd column and the response tokens from the 4th; {file} has 3 columns)"},
		{name: "timed_trace: hash_ids an object", file: "t.jsonl", data: `{"timestamp": 0, "input_length": 4, "output_length": 2, "hash_ids": {"a": 1}}` + "\n",
			args: []string{"--dataset-name", "timed_trace"}, code: 1,
			want: "ValueError: dataset timed_trace: {file} line 1: \"hash_ids\" must be a list of hash ids, got {\"a\": 1}"},
		{name: "timed_trace: no input length", file: "t.jsonl", data: `{"timestamp": 0, "output_length": 2, "hash_ids": [1]}` + "\n",
			args: []string{"--dataset-name", "timed_trace"}, code: 1,
			want: "ValueError: Input length field 'input_length' not found in trace entry. Available fields: ['timestamp', 'output_length', 'hash_ids']. " +
				"Use --label-input-length to specify the correct field name. (The flag is --timed-trace-label-input-length.) ({file} line 1)"},
		{name: "timed_trace: a list", file: "t.jsonl", data: "[1]\n", args: []string{"--dataset-name", "timed_trace"}, code: 1,
			want: "ValueError: dataset timed_trace: {file} line 1: want a JSON object, got \"[1]\""},
		{name: "chat template kwargs not an object", file: "d.jsonl", data: "{\"prompt\": \"a\"}\n", args: []string{"--dataset-name", "custom", "--chat-template-kwargs", "[1]"}, code: 2,
			want: `stampede serve: error: argument --chat-template-kwargs: found an array; want a JSON object, such as {"enable_thinking": false}`},
		{name: "missing file", args: []string{"--dataset-name", "sharegpt", "--dataset-path", "no/such.json"}, code: 1,
			want: "FileNotFoundError: dataset sharegpt: --dataset-path no/such.json: no such file or directory"},
		{name: "header with a control byte", args: []string{"--header", "X-Tenant=a\x01b"}, code: 2,
			want: `stampede serve: error: argument --header: header "X-Tenant": the value has a control character (byte 0x01 at offset 1); a header value may hold visible characters, spaces and tabs only`},
		{name: "header name with a space", args: []string{"--header", "X Tenant=a"}, code: 2,
			want: "stampede serve: error: argument --header: header \"X Tenant\": byte ' ' is not allowed in a header name (letters, digits and !#$%&'*+-.^_`|~ only)"},
		{name: "API key with a line break", env: map[string]string{"OPENAI_API_KEY": "sk-a\nX-Injected: 1"}, code: 2,
			want: `stampede serve: error: environment variable OPENAI_API_KEY: header "Authorization": the value has a line break (byte 0x0a at offset 11); a header value may hold visible characters, spaces and tabs only`},
		{name: "URL credentials and an API key", args: []string{"--base-url", "http://u:p@127.0.0.1:1"}, env: map[string]string{"OPENAI_API_KEY": "sk-1"}, code: 1,
			want: "ValueError: Cannot combine AUTHORIZATION header with AUTH argument or credentials encoded in URL (--base-url has user:password@, and $OPENAI_API_KEY sends one; keep one of the two)"},
		{name: "no tokenizer anywhere", noTokenizer: true, code: 1,
			want: "OSError: no tokenizer for m: pass --tokenizer PATH (the model's tokenizer.json, a directory holding one, or a Hugging Face id in the local cache)"},
		{name: "model list not a list", noModel: true, code: 1,
			want: "RuntimeError: Failed to fetch models from server at {server}/v1/models. Check that:",
			also: "Error: {server}/v1/models: the answer is not an OpenAI model list: field \"data\" must be a list, found an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			path := ""
			args := []string{"--base-url", models.URL, "--disable-tqdm", "--num-prompts", "1"}
			if !tt.noTokenizer {
				args = append(args, "--tokenizer", tinyTokenizer)
			}
			if !tt.noModel {
				args = append(args, "--model", "m")
			}
			if tt.file != "" {
				path = filepath.Join(t.TempDir(), tt.file)
				if err := os.WriteFile(path, []byte(tt.data), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--dataset-path", path)
			}
			args = append(args, tt.args...)
			var stdout, stderr strings.Builder
			code := run(context.Background(), args, &stdout, &stderr)
			want := strings.NewReplacer("{file}", path, "{server}", models.URL).Replace(tt.want)
			if got := firstErrorLine(stderr.String()); code != tt.code || got != want {
				t.Errorf("exit %d, first error line\n%s\nwant exit %d and\n%s\n(stderr:\n%s)", code, got, tt.code, want, stderr.String())
			}
			if also := strings.NewReplacer("{server}", models.URL).Replace(tt.also); also != "" && !strings.Contains(stderr.String(), "\n"+also+"\n") {
				t.Errorf("stderr lacks the line\n%s\n(stderr:\n%s)", also, stderr.String())
			}
		})
	}
}

// TestRunAgainstCompletionsEverywhere: a server that routes every POST to
// completions answers /tokenize with a completion stream. As in Python,
// the run warns that /tokenize is unavailable and goes on.
func TestRunAgainstCompletionsEverywhere(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\": [{\"index\": 0, \"text\": \" a\"}]}\n\n"+
			"data: {\"choices\": [], \"usage\": {\"prompt_tokens\": 8, \"completion_tokens\": 1}}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	args := []string{"--base-url", srv.URL, "--model", "m", "--tokenizer", tinyTokenizer, "--dataset-name", "random",
		"--random-input-len", "8", "--random-output-len", "1", "--num-prompts", "2", "--disable-tqdm"}
	var stdout, stderr strings.Builder
	code := run(context.Background(), args, &stdout, &stderr)
	if code != exitOK || !strings.Contains(stdout.String(), "WARNING: /tokenize unavailable, skipping alignment.\n") ||
		!strings.Contains(stdout.String(), "Successful requests:                     2 ") {
		t.Errorf("exit %d; want 0, Python's warning and 2 requests:\n%s\n%s", code, stdout.String(), stderr.String())
	}
}
