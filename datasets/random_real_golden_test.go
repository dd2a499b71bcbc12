package datasets

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/datasets/tokenizer"
)

// realTokenizer loads a real tokenizer file from testdata/tokenizers (see
// scripts/fetch-tokenizers.sh), skipping the test when it is absent.
func realTokenizer(tb testing.TB, file string) *tokenizer.Tokenizer {
	tb.Helper()
	dir := os.Getenv("STAMPEDE_TOKENIZERS_DIR")
	if dir == "" {
		dir = filepath.Join("..", "testdata", "tokenizers")
	}
	path := filepath.Join(dir, file)
	if _, err := os.Stat(path); err != nil {
		tb.Skipf("%s absent (scripts/fetch-tokenizers.sh)", path)
	}
	tok, err := tokenizer.Load(path)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// randomDigest is a SHA-256 over everything SampleRandom returns and logs:
// each request's id, lengths and prompt, length-prefixed, then the log
// lines.
func randomDigest(reqs []Request, logs []string) string {
	h := sha256.New()
	put := func(s string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	for _, r := range reqs {
		put(r.RequestID)
		put(fmt.Sprint(r.PromptLen, r.ExpectedOutputLen))
		put(r.Prompt)
		put(strings.Join(r.PromptList, "\x00"))
	}
	for _, l := range logs {
		put(l)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// randomGoldenCase is one configuration of the real-tokenizer golden.
type randomGoldenCase struct {
	Name    string
	File    string        `json:"-"`
	Options RandomOptions `json:"-"`
	Digest  string
}

func randomGoldenCases() []randomGoldenCase {
	return []randomGoldenCase{
		{Name: "llama3-1024", File: "llama3.json", Options: RandomOptions{Env: &Env{NumPrompts: 1000, Seed: 0}, InputLen: 1024, OutputLen: 128}},
		{Name: "llama3-ratio-prefix", File: "llama3.json", Options: RandomOptions{Env: &Env{NumPrompts: 300, Seed: 12345, RequestIDPrefix: "r-"}, InputLen: 512, OutputLen: 64, RangeRatio: RangeRatio{0.5, 0.5}, PrefixLen: 37}},
		{Name: "qwen3-batch", File: "qwen3.json", Options: RandomOptions{Env: &Env{NumPrompts: 200, Seed: 7}, InputLen: 300, OutputLen: 16, RangeRatio: RangeRatio{0.25, 0}, BatchSize: 3}},
	}
}

// TestSampleRandomRealGolden pins the random dataset built with real
// tokenizers: the digest of every prompt for fixed seeds, recorded by this
// test with -update. Any change to sampling, the length fix or the
// tokenizer that alters one prompt fails it.
func TestSampleRandomRealGolden(t *testing.T) {
	path := filepath.Join("testdata", "random_real_golden.json")
	var want []randomGoldenCase
	if !*update {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
	}
	cases := randomGoldenCases()
	for i := range cases {
		c := &cases[i]
		t.Run(c.Name, func(t *testing.T) {
			tok := realTokenizer(t, c.File)
			var logs []string
			o := c.Options
			o.Logf = func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) }
			reqs, err := SampleRandom(tok, o)
			if err != nil {
				t.Fatal(err)
			}
			c.Digest = randomDigest(reqs, logs)
			if *update {
				return
			}
			if i >= len(want) || want[i].Name != c.Name {
				t.Fatalf("golden file has no case %q (run with -update)", c.Name)
			}
			if c.Digest != want[i].Digest {
				t.Errorf("prompts changed: digest %s, golden %s", c.Digest, want[i].Digest)
			}
		})
	}
	if *update {
		data, err := json.MarshalIndent(cases, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
