package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tinyTokenizer is datasets/tokenizer's committed test tokenizer.
var tinyTokenizer = filepath.Join("..", "..", "datasets", "tokenizer", "testdata", "tiny", "tokenizer.json")

func TestRunTokenize(t *testing.T) {
	if _, err := os.Stat(tinyTokenizer); err != nil {
		t.Fatalf("test tokenizer missing: %v", err)
	}
	tests := []struct {
		name     string
		args     []string
		stdin    string
		code     int
		stderrIn string
	}{
		{"encode string and object", []string{"--tokenizer", tinyTokenizer},
			"\"hello world\"\n\n{\"text\": \"hello\"}\n", 0, ""},
		{"missing tokenizer flag", nil, "", 2, "--tokenizer is required"},
		{"unknown flag", []string{"--tokenizer", tinyTokenizer, "--bogus"}, "", 2, "bogus"},
		{"stray argument", []string{"--tokenizer", tinyTokenizer, "extra"}, "", 2, `unexpected argument "extra"`},
		{"skip without decode", []string{"--tokenizer", tinyTokenizer, "--skip-special-tokens"}, "", 2, "--decode only"},
		{"bad line", []string{"--tokenizer", tinyTokenizer}, "\"ok\"\n{\"txt\": 1}\n", 1, "stdin line 2"},
		{"bad decode line", []string{"--tokenizer", tinyTokenizer, "--decode"}, "{\"ids\": [\"x\"]}\n", 1, "stdin line 1"},
		{"missing file", []string{"--tokenizer", "/nonexistent/tokenizer.json"}, "", 1, "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runTokenize(tc.args, strings.NewReader(tc.stdin), &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, stderr.String())
			}
			if tc.stderrIn != "" && !strings.Contains(stderr.String(), tc.stderrIn) {
				t.Errorf("stderr %q does not mention %q", stderr.String(), tc.stderrIn)
			}
			if tc.code == 0 && strings.Count(stdout.String(), "\n") != 2 {
				t.Errorf("stdout = %q, want two lines", stdout.String())
			}
		})
	}
}

func TestRunTokenizeRoundTrip(t *testing.T) {
	var enc, dec, stderr bytes.Buffer
	if code := runTokenize([]string{"--tokenizer", tinyTokenizer, "--add-special-tokens"},
		strings.NewReader(`"The tokenizer works."`+"\n"), &enc, &stderr); code != 0 {
		t.Fatalf("encode exit %d: %s", code, stderr.String())
	}
	if code := runTokenize([]string{"--tokenizer", tinyTokenizer, "--decode", "--skip-special-tokens"},
		&enc, &dec, &stderr); code != 0 {
		t.Fatalf("decode exit %d: %s", code, stderr.String())
	}
	if got, want := dec.String(), "{\"text\":\"The tokenizer works.\"}\n"; got != want {
		t.Errorf("round trip = %q, want %q", got, want)
	}
}
