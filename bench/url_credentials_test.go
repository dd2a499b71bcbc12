package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
	"github.com/stampede-bench/stampede/datasets"
)

func TestURLCredentialsConfig(t *testing.T) {
	c, err := parseArgs([]string{"--base-url", "http://alice:pw@h:1"}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if c.BaseURL != "http://h:1" || c.APIURL != "http://h:1/v1/completions" || c.URLAuthorization != "Basic YWxpY2U6cHc=" {
		t.Errorf("BaseURL %q APIURL %q URLAuthorization %q", c.BaseURL, c.APIURL, c.URLAuthorization)
	}
	if c.Flags.BaseURL != "http://alice:pw@h:1" {
		t.Errorf("the flag as given is %q", c.Flags.BaseURL)
	}
	for _, tt := range []struct {
		args []string
		env  string
		from string
	}{
		{args: []string{"--header", "authorization=Bearer x"}, from: "--header authorization=... sends one"},
		{env: "sk-1", from: "$OPENAI_API_KEY sends one"},
	} {
		getenv := func(k string) string {
			if k == "OPENAI_API_KEY" {
				return tt.env
			}
			return ""
		}
		_, err := parseArgs(append([]string{"--base-url", "http://alice:pw@h:1"}, tt.args...), getenv)
		var ve *cli.ValidationError
		if !errors.As(err, &ve) || ve.Type != "ValueError" ||
			!strings.HasPrefix(ve.Msg, "Cannot combine AUTHORIZATION header with AUTH argument or credentials encoded in URL") ||
			!strings.Contains(ve.Msg, tt.from) {
			t.Errorf("%v env %q: error %v, want aiohttp's ValueError naming %q", tt.args, tt.env, err, tt.from)
		}
	}
}

// TestURLCredentialsOnTheWire: benchmark requests carry the URL's Basic
// authentication, as aiohttp sends it.
func TestURLCredentialsOnTheWire(t *testing.T) {
	c, err := parseArgs([]string{"--base-url", "http://alice:pw@h:1", "--header", "X-A=b"}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRun(c, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wire, err := r.encode(&datasets.Request{Prompt: "hi", PromptLen: 1, ExpectedOutputLen: 1, RequestID: "id-1"}, BodyParams{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	head := string(wire)
	if !strings.Contains(head, "\r\nAuthorization: Basic YWxpY2U6cHc=\r\n") || !strings.HasPrefix(head, "POST /v1/completions HTTP/1.1\r\nHost: h:1\r\n") {
		t.Errorf("request:\n%s", head)
	}
}

// TestURLCredentialsNeverShown runs a benchmark against a base URL with
// credentials: nothing printed or saved contains them, and an error
// naming the server's URL leaves them out too.
func TestURLCredentialsNeverShown(t *testing.T) {
	srv, err := mock.Start(mock.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	t.Setenv("HF_HUB_OFFLINE", "1")
	for _, tt := range []struct {
		name, base string
		wantErr    bool
	}{
		{name: "run", base: "http://alice:s3cret@" + srv.Addr()},
		{name: "unreachable", base: "http://alice:s3cret@127.0.0.1:1", wantErr: true},
	} {
		c, err := parseArgs([]string{"--base-url", tt.base, "--tokenizer", tinyTokenizer, "--disable-tqdm",
			"--dataset-name", "random", "--num-prompts", "2", "--random-input-len", "16", "--random-output-len", "2",
			"--save-result", "--save-detailed", "--result-dir", dir, "--result-filename", tt.name + ".json"}, noEnv)
		if err != nil {
			t.Fatal(err)
		}
		var out, errOut strings.Builder
		err = Run(context.Background(), c, &out, &errOut)
		if (err != nil) != tt.wantErr {
			t.Fatalf("%s: Run error %v", tt.name, err)
		}
		shown := out.String() + errOut.String()
		if err != nil {
			shown += err.Error()
		}
		if saved, err := os.ReadFile(filepath.Join(dir, tt.name+".json")); err == nil {
			shown += string(saved)
		}
		if strings.Contains(shown, "s3cret") || strings.Contains(shown, "alice") {
			t.Errorf("%s: the credentials are shown:\n%s", tt.name, shown)
		}
	}
}

// TestHeaderValidation: --header and $OPENAI_API_KEY are checked as HTTP
// requires before anything runs, with a usage error naming where the
// header came from and not showing the value.
func TestHeaderValidation(t *testing.T) {
	tests := []struct {
		args []string
		key  string
		want string
	}{
		{args: []string{"--header", "X-A=a\x01b"},
			want: `argument --header: header "X-A": the value has a control character (byte 0x01 at offset 1); a header value may hold visible characters, spaces and tabs only`},
		{args: []string{"--header", "X A=b"},
			want: "argument --header: header \"X A\": byte ' ' is not allowed in a header name (letters, digits and !#$%&'*+-.^_`|~ only)"},
		{args: []string{"--header", "=b"}, want: "argument --header: a header has an empty name; write NAME=VALUE"},
		{args: []string{"--request-id-prefix", "run\t1\x1b-"},
			want: `argument --request-id-prefix: header "x-request-id": the value has a control character (byte 0x1b at offset 5); a header value may hold visible characters, spaces and tabs only`},
		{key: "sk-\x1bsecret",
			want: `environment variable OPENAI_API_KEY: header "Authorization": the value has a control character (byte 0x1b at offset 10); a header value may hold visible characters, spaces and tabs only`},
	}
	for _, tt := range tests {
		_, err := parseArgs(tt.args, func(k string) string {
			if k == "OPENAI_API_KEY" {
				return tt.key
			}
			return ""
		})
		var ue *cli.UsageError
		if !errors.As(err, &ue) || ue.Msg != tt.want {
			t.Errorf("%q key %q: error %v, want usage error %q", tt.args, tt.key, err, tt.want)
		}
	}
}
