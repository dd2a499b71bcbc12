package tokenizer

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// tinyJSON is a complete byte-level BPE tokenizer.json small enough to
// inline: "ab" merges, everything else falls to bytes.
const tinyJSON = `{"version":"1.0","added_tokens":[{"id":5,"content":"<s>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],
"normalizer":null,"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true},
"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],"pair":[],"special_tokens":{"<s>":{"id":"<s>","ids":[5],"tokens":["<s>"]}}},
"decoder":{"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true},
"model":{"type":"BPE","dropout":null,"unk_token":null,"continuing_subword_prefix":null,"end_of_word_suffix":null,"fuse_unk":false,"byte_fallback":false,
"vocab":{"a":0,"b":1,"ab":2,"Ġ":3,"Ġab":4},"merges":["a b","Ġ ab"]}}`

func TestResolveLocal(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokenizer.json")
	if err := os.WriteFile(path, []byte(tinyJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{path, dir} {
		got, err := Resolve(in, ResolveOptions{Offline: true})
		if err != nil || got != path {
			t.Errorf("Resolve(%q) = %q, %v; want %q", in, got, err, path)
		}
	}
	tok, err := FromPretrained(dir, ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Encode(nil, "ab ab", true); !slices.Equal(got, []int32{5, 2, 4}) {
		t.Errorf("Encode = %v, want [5 2 4]", got)
	}
	if _, err := Resolve(filepath.Join(dir, "missing", "x"), ResolveOptions{}); err == nil {
		t.Error("Resolve of a missing path with a slash-y name succeeded")
	}
}

func TestResolveCacheLayout(t *testing.T) {
	cache := t.TempDir()
	const commit = "0123456789abcdef0123456789abcdef01234567"
	repo := filepath.Join(cache, "models--org--model")
	snap := filepath.Join(repo, "snapshots", commit)
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(repo, "refs"), 0o755)
	os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(commit+"\n"), 0o644)
	os.WriteFile(filepath.Join(snap, "tokenizer.json"), []byte(tinyJSON), 0o644)

	t.Setenv("HF_HOME", filepath.Dir(cache))
	t.Setenv("HF_HUB_CACHE", cache)
	got, err := Resolve("org/model", ResolveOptions{Endpoint: "http://127.0.0.1:1", Offline: true})
	if want := filepath.Join(snap, "tokenizer.json"); err != nil || got != want {
		t.Fatalf("Resolve = %q, %v; want %q", got, err, want)
	}
	if _, err := Resolve("org/other", ResolveOptions{Offline: true}); err == nil || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
		t.Errorf("offline miss: err = %v, want one naming HF_HUB_OFFLINE", err)
	}
	t.Setenv("HF_HUB_OFFLINE", "1")
	if _, err := Resolve("org/other", ResolveOptions{}); err == nil {
		t.Error("HF_HUB_OFFLINE=1 did not stop a download")
	}
}

func TestResolveDownload(t *testing.T) {
	const commit = "89abcdef0123456789abcdef0123456789abcdef"
	var hits atomic.Int32
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/org/model/resolve/main/tokenizer.json":
			w.Header().Set("X-Repo-Commit", commit)
			w.Write([]byte(tinyJSON))
		case "/org/model/resolve/main/tokenizer_config.json":
			w.Write([]byte(`{"bos_token": {"content": "<s>"}, "eos_token": "ab"}`))
		case "/org/gated/resolve/main/tokenizer.json":
			if r.Header.Get("Authorization") != "Bearer secret" {
				http.Error(w, "gated", http.StatusUnauthorized)
				return
			}
			w.Write([]byte(tinyJSON))
		default:
			http.NotFound(w, r)
		}
	}))
	defer hub.Close()
	cache := t.TempDir()
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("HF_ENDPOINT", hub.URL)
	t.Setenv("HF_TOKEN", "")
	opts := ResolveOptions{CacheDir: cache}

	path, err := Resolve("org/model", opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cache, "models--org--model", "snapshots", commit, "tokenizer.json"); path != want {
		t.Errorf("path = %q, want %q", path, want)
	}
	if ref, _ := os.ReadFile(filepath.Join(cache, "models--org--model", "refs", "main")); string(ref) != commit {
		t.Errorf("refs/main = %q, want %q", ref, commit)
	}
	tok, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.AllSpecialIDs(); !slices.Equal(got, []int32{2, 5}) {
		t.Errorf("AllSpecialIDs() = %v, want [2 5] from the downloaded tokenizer_config.json", got)
	}
	// The second resolve is served from the cache.
	before := hits.Load()
	if _, err := Resolve("org/model", opts); err != nil || hits.Load() != before {
		t.Errorf("second Resolve: err %v, hub hits %d -> %d", err, before, hits.Load())
	}
	if _, err := Resolve("org/gated", opts); err == nil || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Errorf("gated without token: err = %v, want a hint about HF_TOKEN", err)
	}
	t.Setenv("HF_TOKEN", "secret")
	if _, err := Resolve("org/gated", opts); err != nil {
		t.Errorf("gated with HF_TOKEN: %v", err)
	}
	if _, err := Resolve("org/missing", opts); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("missing repo: err = %v, want a 404", err)
	}
}

func TestAllSpecialIDsFromConfig(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(tinyJSON), 0o644)
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.AllSpecialIDs(); !slices.Equal(got, []int32{5}) {
		t.Errorf("without a config: AllSpecialIDs() = %v, want the special added token [5]", got)
	}
	os.WriteFile(filepath.Join(dir, "tokenizer_config.json"),
		[]byte(`{"pad_token": null, "unk_token": "b", "additional_special_tokens": ["a", {"content": "<s>"}, "absent"]}`), 0o644)
	if tok, err = Load(dir); err != nil {
		t.Fatal(err)
	}
	if got := tok.AllSpecialIDs(); !slices.Equal(got, []int32{0, 1, 5}) {
		t.Errorf("with a config: AllSpecialIDs() = %v, want [0 1 5]", got)
	}
	if got := tok.SpecialAddedIDs(); !slices.Equal(got, []int32{5}) {
		t.Errorf("SpecialAddedIDs() = %v, want [5]", got)
	}
	if id, ok := tok.TokenToID("ab"); !ok || id != 2 {
		t.Errorf("TokenToID(ab) = %d, %v; want 2", id, ok)
	}
	if tok.CleanUpTokenizationSpaces() {
		t.Error("CleanUpTokenizationSpaces() without the config key")
	}
	os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"clean_up_tokenization_spaces": true}`), 0o644)
	if tok, err = Load(dir); err != nil {
		t.Fatal(err)
	}
	// "ab ab" decodes to itself; " ." and friends lose their space.
	ids := append(tok.Encode(nil, "ab ab", false), tok.Encode(nil, " ab", false)...)
	if got := tok.Decode(ids, false); got != "ab ab ab" || !tok.CleanUpTokenizationSpaces() {
		t.Errorf("Decode = %q, want %q", got, "ab ab ab")
	}
	if got := cleanUpSpaces("a , b . c 's d ' e do not"); got != "a, b. c's d'e do not" {
		t.Errorf("cleanUpSpaces = %q", got)
	}
	os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"additional_special_tokens": 3}`), 0o644)
	if _, err := Load(dir); err == nil {
		t.Error("a malformed tokenizer_config.json loaded")
	}
}
