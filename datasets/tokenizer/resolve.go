package tokenizer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/internal/hfenv"
)

// Load reads a tokenizer from path: a tokenizer.json, a .tiktoken (or
// tiktoken-format .model) file, or a directory holding one of them.
func Load(path string) (*Tokenizer, error) {
	file, err := tokenizerFile(path)
	if err != nil {
		return nil, err
	}
	var t *Tokenizer
	if strings.HasSuffix(file, ".json") {
		t, err = loadJSON(file)
	} else {
		t, err = loadTiktoken(file)
	}
	if err != nil {
		return nil, err
	}
	if err := t.applyConfig(filepath.Dir(file)); err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", file, err)
	}
	return t, nil
}

// tokenizerFiles are looked for in a directory, in this order.
var tokenizerFiles = []string{"tokenizer.json", "tiktoken.model", "tokenizer.model"}

// tokenizerFile picks the file to load for path.
func tokenizerFile(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("tokenizer: %w", err)
	}
	if !info.IsDir() {
		return path, nil
	}
	for _, name := range tokenizerFiles {
		if _, err := os.Stat(filepath.Join(path, name)); err == nil {
			return filepath.Join(path, name), nil
		}
	}
	if m, _ := filepath.Glob(filepath.Join(path, "*.tiktoken")); len(m) > 0 {
		return m[0], nil
	}
	return "", fmt.Errorf("tokenizer: directory %s holds no tokenizer.json, *.tiktoken or tiktoken.model", path)
}

// ResolveOptions says where to look for a tokenizer that is not a local
// path. The zero value reads the environment as huggingface_hub does.
type ResolveOptions struct {
	// Revision is the branch, tag or commit; "" means "main".
	Revision string
	// Endpoint is the hub's base URL; "" means $HF_ENDPOINT or
	// https://huggingface.co.
	Endpoint string
	// Token authenticates downloads; "" means $HF_TOKEN.
	Token string
	// CacheDir is the hub cache; "" means $HF_HUB_CACHE, $HF_HOME/hub or
	// ~/.cache/huggingface/hub.
	CacheDir string
	// Offline forbids downloads; $HF_HUB_OFFLINE=1 sets it too.
	Offline bool
	// Client does the downloads; nil means a client with a 5-minute timeout.
	Client *http.Client
}

func (o ResolveOptions) withDefaults() ResolveOptions {
	if o.Revision == "" {
		o.Revision = "main"
	}
	hub := hfenv.Settings{Endpoint: o.Endpoint, Token: o.Token, CacheDir: o.CacheDir, Offline: o.Offline}
	hub.Fill()
	o.Endpoint, o.Token, o.CacheDir, o.Offline = hub.Endpoint, hub.Token, hub.CacheDir, hub.Offline
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 5 * time.Minute}
	}
	return o
}

// repoIDPattern is a hub model id: "name" or "org/name".
var repoIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$`)

// Resolve finds the tokenizer file for --tokenizer/--model: a local file or
// directory as is; otherwise a hub model id, read from the Hugging Face
// cache if it is there and downloaded into it if not (unless offline).
func Resolve(nameOrPath string, opts ResolveOptions) (string, error) {
	if _, err := os.Stat(nameOrPath); err == nil {
		return tokenizerFile(nameOrPath)
	}
	if !repoIDPattern.MatchString(nameOrPath) || strings.Contains(nameOrPath, "..") {
		return "", fmt.Errorf("tokenizer %q: no such file or directory, and not a hub model id (org/name)", nameOrPath)
	}
	opts = opts.withDefaults()
	if path, ok := cachedTokenizer(opts.CacheDir, nameOrPath, opts.Revision); ok {
		return path, nil
	}
	if opts.Offline {
		return "", fmt.Errorf("tokenizer %q: not in the hub cache %s and HF_HUB_OFFLINE is set", nameOrPath, opts.CacheDir)
	}
	return download(nameOrPath, opts)
}

// FromPretrained resolves nameOrPath and loads the tokenizer.
func FromPretrained(nameOrPath string, opts ResolveOptions) (*Tokenizer, error) {
	path, err := Resolve(nameOrPath, opts)
	if err != nil {
		return nil, err
	}
	return Load(path)
}

// repoDir is the cache folder of a model: models--org--name.
func repoDir(cacheDir, repo string) string {
	return filepath.Join(cacheDir, "models--"+strings.ReplaceAll(repo, "/", "--"))
}

// cachedTokenizer looks for snapshots/<commit>/tokenizer.json, the commit
// being refs/<revision> (or the revision itself when it is a commit).
func cachedTokenizer(cacheDir, repo, revision string) (string, bool) {
	dir := repoDir(cacheDir, repo)
	commit := revision
	if ref, err := os.ReadFile(filepath.Join(dir, "refs", revision)); err == nil {
		commit = strings.TrimSpace(string(ref))
	}
	snapshot := filepath.Join(dir, "snapshots", commit)
	for _, name := range tokenizerFiles {
		if _, err := os.Stat(filepath.Join(snapshot, name)); err == nil {
			return filepath.Join(snapshot, name), true
		}
	}
	return "", false
}

// commitPattern is a commit hash as X-Repo-Commit reports it; anything
// else is not used as a directory name.
var commitPattern = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

// download fetches tokenizer.json (and tokenizer_config.json, if the
// repository has one) into the cache's layout (snapshots/<commit> and
// refs/<revision>) and returns the tokenizer.json path.
func download(repo string, opts ResolveOptions) (string, error) {
	if strings.Contains(opts.Revision, "..") || strings.ContainsAny(opts.Revision, `\`) {
		return "", fmt.Errorf("tokenizer %q: revision %q is not a branch, tag or commit", repo, opts.Revision)
	}
	body, commit, err := fetch(repo, "tokenizer.json", opts)
	if err != nil {
		return "", err
	}
	if !commitPattern.MatchString(commit) {
		commit = opts.Revision
	}
	dir := repoDir(opts.CacheDir, repo)
	snapshot := filepath.Join(dir, "snapshots", commit)
	if err := os.MkdirAll(snapshot, 0o755); err != nil {
		return "", fmt.Errorf("tokenizer %q: %w", repo, err)
	}
	path := filepath.Join(snapshot, "tokenizer.json")
	if err := hfenv.WriteFile(path, body); err != nil {
		return "", fmt.Errorf("tokenizer %q: %w", repo, err)
	}
	// tokenizer_config.json names the special tokens (AllSpecialIDs); a
	// repository without one is fine.
	if cfg, _, err := fetch(repo, "tokenizer_config.json", opts); err == nil {
		_ = hfenv.WriteFile(filepath.Join(snapshot, "tokenizer_config.json"), cfg)
	}
	if commit != opts.Revision {
		if err := os.MkdirAll(filepath.Join(dir, "refs"), 0o755); err == nil {
			_ = hfenv.WriteFile(filepath.Join(dir, "refs", opts.Revision), []byte(commit))
		}
	}
	return path, nil
}

// maxTokenizerBytes bounds a download; the largest tokenizer.json files
// (Gemma-3) are about 35 MB.
const maxTokenizerBytes = 512 << 20

// fetch GETs {endpoint}/{repo}/resolve/{revision}/{file} and returns the
// body and the commit the hub reports in X-Repo-Commit.
func fetch(repo, file string, opts ResolveOptions) ([]byte, string, error) {
	u := opts.Endpoint + "/" + repo + "/resolve/" + url.PathEscape(opts.Revision) + "/" + file
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, u, nil)
	if err != nil {
		return nil, "", fmt.Errorf("tokenizer %q: %w", repo, err)
	}
	if opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+opts.Token)
	}
	resp, err := opts.Client.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("tokenizer %q: download: %w", repo, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, "", fmt.Errorf("tokenizer %q: %s: %s (gated or private? set HF_TOKEN)", repo, u, resp.Status)
	case resp.StatusCode == http.StatusNotFound:
		return nil, "", fmt.Errorf("tokenizer %q: %s: %s (no such model, revision or tokenizer.json)", repo, u, resp.Status)
	case resp.StatusCode != http.StatusOK:
		return nil, "", fmt.Errorf("tokenizer %q: %s: %s", repo, u, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenizerBytes+1))
	if err != nil {
		return nil, "", fmt.Errorf("tokenizer %q: download: %w", repo, err)
	}
	if len(body) > maxTokenizerBytes {
		return nil, "", fmt.Errorf("tokenizer %q: %s is larger than %d bytes", repo, u, maxTokenizerBytes)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, "", errors.New("tokenizer " + repo + ": empty download")
	}
	return body, resp.Header.Get("X-Repo-Commit"), nil
}
