// Package hfhub finds and reads Hugging Face hub datasets the way the
// `datasets` library's load_dataset does for the files stampede can read
// (Parquet, JSON, JSON lines): a local directory or file, the hub cache
// ($HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub), or a download
// from $HF_ENDPOINT into that cache unless $HF_HUB_OFFLINE is set; the
// split's files are picked by the repository's README `configs:` or by
// the library's file-name rules, and rows come out in load_dataset's
// order, shuffled as Dataset.shuffle / IterableDataset.shuffle do.
package hfhub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/internal/hfenv"
)

// Options say where datasets are looked for. The zero value reads the
// environment as huggingface_hub does.
type Options struct {
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
	// Client does the downloads; nil means a client with a 30-minute
	// timeout (data files are large).
	Client *http.Client
}

func (o Options) withDefaults() Options {
	hub := hfenv.Settings{Endpoint: o.Endpoint, Token: o.Token, CacheDir: o.CacheDir, Offline: o.Offline}
	hub.Fill()
	o.Endpoint, o.Token, o.CacheDir, o.Offline = hub.Endpoint, hub.Token, hub.CacheDir, hub.Offline
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 30 * time.Minute}
	}
	return o
}

// Source is a located split: its data files in load order, and the
// directory they are relative to (a snapshot, or the local directory).
type Source struct {
	Repo  string   // the hub id, or the local path
	Root  string   // the snapshot or local directory; "" for a single file
	Files []string // absolute paths, in load_dataset's order
}

// repoIDPattern is a hub dataset id: "org/name" (or a bare name).
var repoIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$`)

// Locate finds the files of split (and subset, "" for the default
// config) of the dataset at pathOrID: a local file or directory as it is,
// else a hub id from the cache or, unless offline, downloaded into it.
func Locate(pathOrID, subset, split string, opts Options) (*Source, error) {
	if info, err := os.Stat(pathOrID); err == nil {
		if !info.IsDir() {
			abs, _ := filepath.Abs(pathOrID)
			if !dataExt(abs) {
				return nil, fmt.Errorf("%s: not a .parquet, .json or .jsonl file", pathOrID)
			}
			return &Source{Repo: pathOrID, Files: []string{abs}}, nil
		}
		root, _ := filepath.Abs(pathOrID)
		files, err := listLocal(root)
		if err != nil {
			return nil, err
		}
		sel, err := selectSplit(readLocalCard(root), files, subset, split)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", pathOrID, err)
		}
		return &Source{Repo: pathOrID, Root: root, Files: joinAll(root, sel)}, nil
	}
	if !repoIDPattern.MatchString(pathOrID) || strings.Contains(pathOrID, "..") {
		return nil, fmt.Errorf("%q: no such file or directory, and not a hub dataset id (org/name)", pathOrID)
	}
	opts = opts.withDefaults()
	src, cacheErr := fromCache(opts.CacheDir, pathOrID, subset, split)
	if cacheErr == nil {
		return src, nil
	}
	var splitErr *SplitError
	if opts.Offline {
		if errors.As(cacheErr, &splitErr) {
			return nil, cacheErr
		}
		return nil, fmt.Errorf("dataset %q: %v, and HF_HUB_OFFLINE is set, so nothing is downloaded", pathOrID, cacheErr)
	}
	// A cached snapshot may hold only the splits fetched so far; the
	// repository's listing decides.
	return download(pathOrID, subset, split, opts)
}

// ErrNotFound is wrapped by the errors of downloads the hub answered
// with 404.
var ErrNotFound = errors.New("not found on the hub")

// SplitError is load_dataset's error for a split or config the dataset
// does not have.
type SplitError struct {
	Msg string
}

func (e *SplitError) Error() string { return e.Msg }

// repoDir is the cache folder of a dataset: datasets--org--name.
func repoDir(cacheDir, repo string) string {
	return filepath.Join(cacheDir, "datasets--"+strings.ReplaceAll(repo, "/", "--"))
}

// snapshotOf resolves refs/<ref> to its snapshot directory.
func snapshotOf(dir, ref string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "refs", filepath.FromSlash(ref)))
	if err != nil {
		return "", false
	}
	snap := filepath.Join(dir, "snapshots", strings.TrimSpace(string(b)))
	if info, err := os.Stat(snap); err != nil || !info.IsDir() {
		return "", false
	}
	return snap, true
}

// fromCache reads the hub cache: the main branch's snapshot, else the
// hub's Parquet export (refs/convert/parquet, laid out as
// <config>/<split>/NNNN.parquet).
func fromCache(cacheDir, repo, subset, split string) (*Source, error) {
	dir := repoDir(cacheDir, repo)
	if snap, ok := snapshotOf(dir, "main"); ok {
		files, err := listLocal(snap)
		if err == nil && len(files) > 0 {
			sel, err := selectSplit(readLocalCard(snap), files, subset, split)
			if err != nil {
				return nil, err
			}
			return &Source{Repo: repo, Root: snap, Files: joinAll(snap, sel)}, nil
		}
	}
	if snap, ok := snapshotOf(dir, "convert/parquet"); ok {
		files, _ := listLocal(snap)
		if sel := exportFiles(files, subset, split); len(sel) > 0 {
			return &Source{Repo: repo, Root: snap, Files: joinAll(snap, sel)}, nil
		}
	}
	return nil, fmt.Errorf("no data files of split %q in the hub cache %s", split, dir)
}

// exportFiles picks <config>/<split>/*.parquet (or partial-<split>) from
// the Parquet export's listing.
func exportFiles(files []string, subset, split string) []string {
	if subset == "" {
		subset = "default"
	}
	var out []string
	for _, f := range files {
		parts := strings.Split(f, "/")
		if len(parts) == 3 && parts[0] == subset && (parts[1] == split || parts[1] == "partial-"+split) &&
			strings.HasSuffix(f, ".parquet") {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

func joinAll(root string, rel []string) []string {
	out := make([]string, len(rel))
	for i, r := range rel {
		out[i] = filepath.Join(root, filepath.FromSlash(r))
	}
	return out
}

// dataExt reports whether name is a file format stampede reads.
func dataExt(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".parquet", ".json", ".jsonl":
		return true
	}
	return false
}

// listLocal lists the data files under root, slash-separated and
// relative, skipping hidden files and directories.
func listLocal(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && p != root {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() && dataExt(d.Name()) {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// readLocalCard reads root/README.md, "" if there is none.
func readLocalCard(root string) string {
	b, _ := os.ReadFile(filepath.Join(root, "README.md"))
	return string(b)
}

// download lists the repository at its main revision, picks the split's
// files, and fetches each into snapshots/<commit>/<path> with refs/main
// pointing at it. A repository with no data files of its own (a loading
// script) is read from the hub's Parquet export instead.
func download(repo, subset, split string, opts Options) (*Source, error) {
	commit, files, err := listTree(repo, "main", opts)
	if err != nil {
		return nil, err
	}
	var sel []string
	ref := "main"
	if len(files) > 0 {
		card := ""
		if b, err := fetchFile(repo, commit, "README.md", opts); err == nil {
			card = string(b)
			// Kept beside the data, so that offline runs choose the
			// split's files by the same configs.
			readme := filepath.Join(repoDir(opts.CacheDir, repo), "snapshots", commit, "README.md")
			if os.MkdirAll(filepath.Dir(readme), 0o755) == nil {
				_ = hfenv.WriteFile(readme, b)
			}
		}
		if sel, err = selectSplit(card, files, subset, split); err != nil {
			return nil, err
		}
	} else {
		ref = "refs/convert/parquet"
		if commit, files, err = listTree(repo, ref, opts); err != nil {
			return nil, err
		}
		if sel = exportFiles(files, subset, split); len(sel) == 0 {
			return nil, &SplitError{Msg: fmt.Sprintf("dataset %q has no Parquet, JSON or JSON-lines files, and its Parquet export has no config %q split %q", repo, orDefault(subset), split)}
		}
	}
	dir := repoDir(opts.CacheDir, repo)
	snap := filepath.Join(dir, "snapshots", commit)
	for _, f := range sel {
		dst := filepath.Join(snap, filepath.FromSlash(f))
		if _, err := os.Stat(dst); err == nil {
			continue
		}
		if err := fetchInto(repo, commit, f, dst, opts); err != nil {
			return nil, err
		}
	}
	refName := "main"
	if ref != "main" {
		refName = "convert/parquet"
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, "refs", filepath.FromSlash(refName))), 0o755); err != nil {
		return nil, fmt.Errorf("dataset %q: %w", repo, err)
	}
	if err := hfenv.WriteFile(filepath.Join(dir, "refs", filepath.FromSlash(refName)), []byte(commit)); err != nil {
		return nil, fmt.Errorf("dataset %q: %w", repo, err)
	}
	return &Source{Repo: repo, Root: snap, Files: joinAll(snap, sel)}, nil
}

// FetchFile makes sure the repository file rel is in the cache snapshot
// root (downloading it unless offline) and returns its path; MMVU's
// videos and BFCL's category files are fetched this way.
func FetchFile(repo, rel string, opts Options) (string, error) {
	opts = opts.withDefaults()
	dir := repoDir(opts.CacheDir, repo)
	if snap, ok := snapshotOf(dir, "main"); ok {
		p := filepath.Join(snap, filepath.FromSlash(rel))
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if opts.Offline {
		return "", fmt.Errorf("dataset %q: %s is not in the hub cache %s, and HF_HUB_OFFLINE is set, so nothing is downloaded", repo, rel, opts.CacheDir)
	}
	commit, err := revisionCommit(repo, "main", opts)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "snapshots", commit, filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		if err := fetchInto(repo, commit, rel, p, opts); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "refs"), 0o755); err == nil {
		_ = hfenv.WriteFile(filepath.Join(dir, "refs", "main"), []byte(commit))
	}
	return p, nil
}

// SnapshotRoot is the directory the cache's main snapshot of repo is (or
// will be) in: snapshot_download's return value.
func SnapshotRoot(repo string, opts Options) (string, error) {
	opts = opts.withDefaults()
	dir := repoDir(opts.CacheDir, repo)
	if snap, ok := snapshotOf(dir, "main"); ok {
		return snap, nil
	}
	if opts.Offline {
		return "", fmt.Errorf("dataset %q: not in the hub cache %s, and HF_HUB_OFFLINE is set, so nothing is downloaded", repo, opts.CacheDir)
	}
	commit, err := revisionCommit(repo, "main", opts)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "snapshots", commit), nil
}

func orDefault(s string) string {
	if s == "" {
		return "default"
	}
	return s
}

// commitPattern is a commit hash; anything else is not used as a
// directory name.
var commitPattern = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

// revisionCommit asks the hub which commit revision is.
func revisionCommit(repo, revision string, opts Options) (string, error) {
	u := opts.Endpoint + "/api/datasets/" + repo + "/revision/" + url.PathEscape(revision)
	body, _, err := get(repo, u, opts, 1<<20)
	if err != nil {
		return "", err
	}
	var info struct {
		SHA string `json:"sha"`
	}
	if err := json.Unmarshal(body, &info); err != nil || !commitPattern.MatchString(info.SHA) {
		return "", fmt.Errorf("dataset %q: %s: want a JSON object with the commit \"sha\"", repo, u)
	}
	return info.SHA, nil
}

// listTree is the hub's tree API at revision, recursively: the commit
// and the data files, slash-separated and sorted.
func listTree(repo, revision string, opts Options) (string, []string, error) {
	commit, err := revisionCommit(repo, revision, opts)
	if err != nil {
		return "", nil, err
	}
	u := opts.Endpoint + "/api/datasets/" + repo + "/tree/" + commit + "?recursive=true"
	body, _, err := get(repo, u, opts, 256<<20)
	if err != nil {
		return "", nil, err
	}
	var entries []struct {
		Type string `json:"type"`
		Path string `json:"path"`
	}
	if err := json.Unmarshal(body, &entries); err != nil {
		return "", nil, fmt.Errorf("dataset %q: %s: want a JSON list of {\"type\", \"path\"} entries: %v", repo, u, err)
	}
	var files []string
	for _, e := range entries {
		if e.Type == "file" && dataExt(e.Path) && safeRel(e.Path) && !hiddenPath(e.Path) {
			files = append(files, e.Path)
		}
	}
	sort.Strings(files)
	return commit, files, nil
}

// safeRel reports whether rel stays inside the snapshot.
func safeRel(rel string) bool {
	return rel != "" && !strings.HasPrefix(rel, "/") && !strings.Contains(rel, "\\") &&
		path.Clean(rel) == rel && !strings.HasPrefix(rel, "../") && rel != ".."
}

func hiddenPath(rel string) bool {
	for _, part := range strings.Split(rel, "/") {
		if strings.HasPrefix(part, ".") {
			return true
		}
	}
	return false
}

// fetchFile GETs one file of the repository at revision.
func fetchFile(repo, revision, rel string, opts Options) ([]byte, error) {
	u := opts.Endpoint + "/datasets/" + repo + "/resolve/" + url.PathEscape(revision) + "/" + escapePath(rel)
	body, _, err := get(repo, u, opts, 64<<20)
	return body, err
}

func escapePath(rel string) string {
	parts := strings.Split(rel, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// fetchInto streams one repository file into dst (through a temporary
// file in the same directory, so a broken download leaves nothing).
func fetchInto(repo, commit, rel, dst string, opts Options) error {
	if !safeRel(rel) {
		return fmt.Errorf("dataset %q: file name %q leaves the snapshot", repo, rel)
	}
	u := opts.Endpoint + "/datasets/" + repo + "/resolve/" + commit + "/" + escapePath(rel)
	resp, err := do(repo, u, opts)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("dataset %q: %w", repo, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".tmp-*")
	if err != nil {
		return fmt.Errorf("dataset %q: %w", repo, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, resp.Body); err != nil {
		tmp.Close()
		return fmt.Errorf("dataset %q: download %s: %w", repo, u, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("dataset %q: %w", repo, err)
	}
	return os.Rename(tmp.Name(), dst)
}

// get GETs u and returns at most limit bytes of its body.
func get(repo, u string, opts Options, limit int64) ([]byte, http.Header, error) {
	resp, err := do(repo, u, opts)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, nil, fmt.Errorf("dataset %q: download %s: %w", repo, u, err)
	}
	if int64(len(body)) > limit {
		return nil, nil, fmt.Errorf("dataset %q: %s is larger than %d bytes", repo, u, limit)
	}
	return body, resp.Header, nil
}

// do sends an authenticated GET and turns the hub's refusals into errors
// that say what to do.
func do(repo, u string, opts Options) (*http.Response, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("dataset %q: %w", repo, err)
	}
	if opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+opts.Token)
	}
	resp, err := opts.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("dataset %q: download: %w", repo, err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return nil, fmt.Errorf("dataset %q: %s: %s (gated or private? set HF_TOKEN)", repo, u, resp.Status)
	case http.StatusNotFound:
		return nil, fmt.Errorf("dataset %q: %s: %s (no such dataset, revision or file): %w", repo, u, resp.Status, ErrNotFound)
	}
	return nil, fmt.Errorf("dataset %q: %s: %s", repo, u, resp.Status)
}
