package endpoint

import (
	"errors"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/backend"
	"github.com/stampede-bench/stampede/bench/internal/benchtest"
	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/internal/py"
)

func TestURLCredentialsConfig(t *testing.T) {
	c, err := benchtest.ParseArgs([]string{"--base-url", "http://alice:pw@h:1"}, benchtest.NoEnv)
	if err != nil {
		t.Fatal(err)
	}
	if c.BaseURL != "http://h:1" || c.APIURL != "http://h:1/v1/completions" || c.URLAuthorization != "Basic YWxpY2U6cHc=" {
		t.Errorf("BaseURL %q APIURL %q URLAuthorization %q", c.BaseURL, c.APIURL, c.URLAuthorization)
	}
	if c.Options.BaseURL != "http://alice:pw@h:1" {
		t.Errorf("the flag as given is %q", c.Options.BaseURL)
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
		_, err := benchtest.ParseArgs(append([]string{"--base-url", "http://alice:pw@h:1"}, tt.args...), getenv)
		var ve *py.Error
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
	c, err := benchtest.ParseArgs([]string{"--base-url", "http://alice:pw@h:1", "--header", "X-A=b"}, benchtest.NoEnv)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	wire, err := s.EncodeRequest(&datasets.Request{Prompt: "hi", PromptLen: 1, ExpectedOutputLen: 1, RequestID: "id-1"}, backend.BodyParams{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	head := string(wire)
	if !strings.Contains(head, "\r\nAuthorization: Basic YWxpY2U6cHc=\r\n") || !strings.HasPrefix(head, "POST /v1/completions HTTP/1.1\r\nHost: h:1\r\n") {
		t.Errorf("request:\n%s", head)
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
		_, err := benchtest.ParseArgs(tt.args, func(k string) string {
			if k == "OPENAI_API_KEY" {
				return tt.key
			}
			return ""
		})
		var ue *py.UsageError
		if !errors.As(err, &ue) || ue.Msg != tt.want {
			t.Errorf("%q key %q: error %v, want usage error %q", tt.args, tt.key, err, tt.want)
		}
	}
}
