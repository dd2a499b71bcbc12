package hfhub

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/stampede-bench/stampede/datasets/pyrand"
)

type idRow struct {
	ID   int64  `parquet:"id"`
	Text string `parquet:"text,optional"`
}

// writeIDsTo writes a small seed file for the fuzz target.
func writeIDsTo(tb testing.TB, path string) { writeIDs(tb, path, 0, 5) }

// writeIDs writes a Parquet file of rows with ids from..to-1.
func writeIDs(t testing.TB, path string, from, to int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[idRow](f)
	var rows []idRow
	for i := from; i < to; i++ {
		rows = append(rows, idRow{ID: int64(i), Text: "row"})
	}
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readIDs(t *testing.T, files []string, o Order) []int64 {
	t.Helper()
	r, err := Open(files, o)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var ids []int64
	for {
		row, err := r.Next()
		if errors.Is(err, io.EOF) {
			return ids
		}
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, row.Fields["id"].(int64))
	}
}

func TestOrderSequentialAndNoStream(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.parquet"), filepath.Join(dir, "b.parquet")
	writeIDs(t, a, 0, 30)
	writeIDs(t, b, 30, 50)
	got := readIDs(t, []string{a, b}, Order{})
	for i, id := range got {
		if id != int64(i) {
			t.Fatalf("sequential row %d has id %d", i, id)
		}
	}
	if len(got) != 50 {
		t.Fatalf("read %d rows, want 50", len(got))
	}
	// Dataset.shuffle(seed): the concatenated rows through
	// default_rng(seed).permutation(n).
	perm := pyrand.NewGenerator(7).Permutation(50)
	got = readIDs(t, []string{a, b}, Order{Shuffle: true, Seed: 7})
	for i, id := range got {
		if id != int64(perm[i]) {
			t.Fatalf("no-stream row %d has id %d, want %d", i, id, perm[i])
		}
	}
}

func TestOrderStreamSmallEqualsPermutation(t *testing.T) {
	// With fewer rows than the buffer and one file, the streaming shuffle
	// draws nothing until the end, then shuffles the buffer with a fresh
	// default_rng(seed): the same order as Dataset.shuffle.
	dir := t.TempDir()
	a := filepath.Join(dir, "a.parquet")
	writeIDs(t, a, 0, 200)
	stream := readIDs(t, []string{a}, Order{Shuffle: true, Stream: true, Seed: 3})
	whole := readIDs(t, []string{a}, Order{Shuffle: true, Seed: 3})
	if !reflect.DeepEqual(stream, whole) {
		t.Fatalf("stream order differs from the permutation:\n%v\n%v", stream[:10], whole[:10])
	}
}

func TestOrderStreamBuffer(t *testing.T) {
	// Past the buffer size every row still comes out once; the file order
	// is default_rng(seed)'s shuffle of the list and the first row out is
	// buffer[integers(0, 1000)[0]] of the first file's first 1000 rows.
	dir := t.TempDir()
	files := []string{filepath.Join(dir, "0.parquet"), filepath.Join(dir, "1.parquet"), filepath.Join(dir, "2.parquet")}
	for i, f := range files {
		writeIDs(t, f, i*1000, (i+1)*1000)
	}
	got := readIDs(t, files, Order{Shuffle: true, Stream: true, Seed: 11})
	if len(got) != 3000 {
		t.Fatalf("read %d rows, want 3000", len(got))
	}
	seen := map[int64]bool{}
	for _, id := range got {
		if seen[id] {
			t.Fatalf("id %d twice", id)
		}
		seen[id] = true
	}
	order := []int{0, 1, 2}
	pyrand.NewGenerator(11).Shuffle(3, func(i, j int) { order[i], order[j] = order[j], order[i] })
	first, _ := pyrand.NewGenerator(11).Integers(0, BufferSize, 1)
	want := int64(order[0]*1000) + first[0]
	if got[0] != want {
		t.Fatalf("first row %d, want %d (file order %v)", got[0], want, order)
	}
}

func TestSelectSplitCard(t *testing.T) {
	card := "---\nlicense: mit\ndataset_info:\n  features:\n  - name: x\n    dtype: string\nconfigs:\n- config_name: main\n  data_files:\n  - split: train\n    path: main/train-*\n  - split: test\n    path: main/test-*\n- config_name: socratic\n  data_files:\n  - split: test\n    path:\n    - socratic/test-*\n  default: true\n---\n# GSM8K\n"
	files := []string{"main/test-00000-of-00001.parquet", "main/train-00000-of-00001.parquet", "socratic/test-00000-of-00001.parquet"}
	got, err := selectSplit(card, files, "main", "test")
	if err != nil || !reflect.DeepEqual(got, []string{"main/test-00000-of-00001.parquet"}) {
		t.Fatalf("main/test = %v, %v", got, err)
	}
	got, err = selectSplit(card, files, "", "test")
	if err != nil || !reflect.DeepEqual(got, []string{"socratic/test-00000-of-00001.parquet"}) {
		t.Fatalf("default config test = %v, %v", got, err)
	}
	_, err = selectSplit(card, files, "main", "validation")
	var se *SplitError
	if !errors.As(err, &se) || se.Msg != `Unknown split "validation". Should be one of ['train', 'test'].` {
		t.Fatalf("unknown split error = %v", err)
	}
	_, err = selectSplit(card, files, "nope", "test")
	if !errors.As(err, &se) || !strings.Contains(se.Msg, "'main', 'socratic'") {
		t.Fatalf("unknown config error = %v", err)
	}
}

func TestInferSplits(t *testing.T) {
	tests := []struct {
		files []string
		split string
		want  []string
	}{
		{[]string{"data/train-00000-of-00002.parquet", "data/train-00001-of-00002.parquet", "data/val-00000-of-00001.parquet"}, "val",
			[]string{"data/val-00000-of-00001.parquet"}},
		{[]string{"train/a.jsonl", "test/b.jsonl", "dev.jsonl"}, "test", []string{"test/b.jsonl"}},
		{[]string{"my_train.json", "my_dev.json", "README.json"}, "validation", []string{"my_dev.json"}},
		{[]string{"mt_bench.jsonl"}, "train", []string{"mt_bench.jsonl"}},
		{[]string{"trainer.jsonl", "x.jsonl"}, "train", []string{"trainer.jsonl", "x.jsonl"}},
	}
	for _, tt := range tests {
		got, err := selectSplit("", tt.files, "", tt.split)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("selectSplit(%v, %q) = %v, %v; want %v", tt.files, tt.split, got, err, tt.want)
		}
	}
}

func TestGlobRegexp(t *testing.T) {
	for _, tt := range []struct {
		glob, path string
		match      bool
	}{
		{"data/train-*", "data/train-00000-of-00001.parquet", true},
		{"data/train-*", "data/x/train-0.parquet", false},
		{"**/*.parquet", "a/b/c.parquet", true},
		{"**/*.parquet", "c.parquet", true},
		{"mmstar.parquet", "mmstar.parquet", true},
		{"data/[!x]*.json", "data/a.json", true},
		{"data/[!x]*.json", "data/x.json", false},
	} {
		if got := globRegexp(tt.glob).MatchString(tt.path); got != tt.match {
			t.Errorf("glob %q on %q = %v, want %v", tt.glob, tt.path, got, tt.match)
		}
	}
}

func TestParseYAML(t *testing.T) {
	v, err := parseYAML("a: 1\nb:\n  - x\n  - 'y''s'\nc:\n- k: v\n  l: [p, \"q\"]\nd: |\n  text\n  more\ne: end # comment\n")
	if err != nil {
		t.Fatal(err)
	}
	m := v.(*yMap)
	if !reflect.DeepEqual(m.keys, []string{"a", "b", "c", "d", "e"}) {
		t.Fatalf("keys %v", m.keys)
	}
	if !reflect.DeepEqual(m.get("b"), []any{"x", "y's"}) {
		t.Errorf("b = %#v", m.get("b"))
	}
	c := m.get("c").([]any)[0].(*yMap)
	if c.get("k") != "v" || !reflect.DeepEqual(c.get("l"), []any{"p", "q"}) {
		t.Errorf("c = %#v", c)
	}
	if m.get("e") != "end" {
		t.Errorf("e = %#v", m.get("e"))
	}
}

// fakeCache lays out datasets--org--name with refs/main → snapshots/rev.
func fakeCache(t *testing.T, repo string, files map[string]func(path string)) (cache, snap string) {
	t.Helper()
	cache = t.TempDir()
	dir := repoDir(cache, repo)
	snap = filepath.Join(dir, "snapshots", "0123abcd")
	if err := os.MkdirAll(filepath.Join(dir, "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "refs", "main"), []byte("0123abcd"), 0o644); err != nil {
		t.Fatal(err)
	}
	for rel, write := range files {
		p := filepath.Join(snap, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		write(p)
	}
	return cache, snap
}

func TestLocateCacheAndOffline(t *testing.T) {
	cache, snap := fakeCache(t, "org/set", map[string]func(string){
		"data/train-00000-of-00001.parquet": func(p string) { writeIDs(t, p, 0, 3) },
		"data/test-00000-of-00001.parquet":  func(p string) { writeIDs(t, p, 3, 5) },
	})
	t.Setenv("HF_HUB_OFFLINE", "1")
	src, err := Locate("org/set", "", "test", Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(snap, "data", "test-00000-of-00001.parquet")}; !reflect.DeepEqual(src.Files, want) {
		t.Fatalf("files %v, want %v", src.Files, want)
	}
	// HF_HOME/hub is the cache when no directory is given.
	home := filepath.Dir(cache)
	if err := os.Rename(cache, filepath.Join(home, "hub")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_HOME", home)
	if _, err := Locate("org/set", "", "train", Options{}); err != nil {
		t.Fatalf("HF_HOME lookup: %v", err)
	}
	_, err = Locate("org/other", "", "train", Options{})
	if err == nil || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
		t.Fatalf("offline miss = %v, want an error naming HF_HUB_OFFLINE", err)
	}
}

func TestLocateLocalDirAndFile(t *testing.T) {
	dir := t.TempDir()
	writeIDs(t, filepath.Join(dir, "train.parquet"), 0, 2)
	writeIDs(t, filepath.Join(dir, "test.parquet"), 2, 4)
	src, err := Locate(dir, "", "test", Options{})
	if err != nil || len(src.Files) != 1 || filepath.Base(src.Files[0]) != "test.parquet" {
		t.Fatalf("Locate(dir) = %+v, %v", src, err)
	}
	src, err = Locate(filepath.Join(dir, "train.parquet"), "", "whatever", Options{})
	if err != nil || len(src.Files) != 1 {
		t.Fatalf("Locate(file) = %+v, %v", src, err)
	}
}

// hubServer serves one dataset repository the way the hub's API does.
func hubServer(t *testing.T, repo, sha, token string, files map[string][]byte) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var downloads atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		switch p := r.URL.Path; {
		case p == "/api/datasets/"+repo+"/revision/main":
			_ = json.NewEncoder(w).Encode(map[string]string{"sha": sha})
		case p == "/api/datasets/"+repo+"/tree/"+sha:
			if r.URL.Query().Get("recursive") != "true" {
				http.Error(w, "want recursive", http.StatusBadRequest)
				return
			}
			var entries []map[string]string
			for name := range files {
				entries = append(entries, map[string]string{"type": "file", "path": name})
			}
			entries = append(entries, map[string]string{"type": "directory", "path": "data"})
			_ = json.NewEncoder(w).Encode(entries)
		case strings.HasPrefix(p, "/datasets/"+repo+"/resolve/"+sha+"/"):
			name := strings.TrimPrefix(p, "/datasets/"+repo+"/resolve/"+sha+"/")
			body, ok := files[name]
			if !ok {
				http.NotFound(w, r)
				return
			}
			downloads.Add(1)
			_, _ = w.Write(body)
		default:
			http.NotFound(w, r)
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &downloads
}

func TestDownloadIntoCache(t *testing.T) {
	tmp := t.TempDir()
	train, test := filepath.Join(tmp, "train.parquet"), filepath.Join(tmp, "test.parquet")
	writeIDs(t, train, 0, 4)
	writeIDs(t, test, 4, 6)
	trainBytes, _ := os.ReadFile(train)
	testBytes, _ := os.ReadFile(test)
	const sha = "feedbeef01"
	srv, downloads := hubServer(t, "org/set", sha, "tok", map[string][]byte{
		"data/train-00000-of-00001.parquet": trainBytes,
		"data/test-00000-of-00001.parquet":  testBytes,
		"README.md":                         []byte("# no front matter\n"),
	})
	t.Setenv("HF_HUB_OFFLINE", "")
	cache := t.TempDir()
	opts := Options{Endpoint: srv.URL, Token: "tok", CacheDir: cache}
	src, err := Locate("org/set", "", "train", opts)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(cache, "datasets--org--set", "snapshots", sha, "data", "train-00000-of-00001.parquet")
	if !reflect.DeepEqual(src.Files, []string{want}) {
		t.Fatalf("files %v, want %v", src.Files, []string{want})
	}
	if ids := readIDs(t, src.Files, Order{}); !reflect.DeepEqual(ids, []int64{0, 1, 2, 3}) {
		t.Fatalf("downloaded rows %v", ids)
	}
	ref, _ := os.ReadFile(filepath.Join(cache, "datasets--org--set", "refs", "main"))
	if string(ref) != sha {
		t.Fatalf("refs/main = %q", ref)
	}
	// The second lookup reads the cache, offline.
	before := downloads.Load()
	if _, err := Locate("org/set", "", "train", Options{CacheDir: cache, Offline: true}); err != nil {
		t.Fatalf("cached lookup: %v", err)
	}
	if downloads.Load() != before {
		t.Fatal("the cached lookup downloaded again")
	}
	// Another split is fetched into the same snapshot, though the cache
	// already has the dataset; offline, both are then found.
	if _, err := Locate("org/set", "", "test", opts); err != nil {
		t.Fatalf("second split: %v", err)
	}
	for _, split := range []string{"train", "test"} {
		if _, err := Locate("org/set", "", split, Options{CacheDir: cache, Offline: true}); err != nil {
			t.Errorf("offline %s: %v", split, err)
		}
	}
	if _, err := os.Stat(filepath.Join(cache, "datasets--org--set", "snapshots", sha, "README.md")); err != nil {
		t.Errorf("the card was not kept: %v", err)
	}
	// A wrong token is refused with advice.
	_, err = Locate("org/set", "", "train", Options{Endpoint: srv.URL, Token: "bad", CacheDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Fatalf("bad token error = %v", err)
	}
	// A file the repository lacks is ErrNotFound.
	_, err = FetchFile("org/set", "BFCL_v3_nope.json", Options{Endpoint: srv.URL, Token: "tok", CacheDir: t.TempDir()})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing file error = %v", err)
	}
}

func TestJSONFiles(t *testing.T) {
	dir := t.TempDir()
	arr := filepath.Join(dir, "a.json")
	lines := filepath.Join(dir, "b.json")
	_ = os.WriteFile(arr, []byte(` [{"z": 1, "a": {"y": 2.5, "b": null}}, {"z": 2}]`), 0o644)
	_ = os.WriteFile(lines, []byte("{\"q\": [1, \"x\"]}\n\n{\"q\": true}\n"), 0o644)
	r, err := Open([]string{arr, lines}, Order{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		o, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(o)
		got = append(got, string(b))
	}
	want := []string{`{"z":1,"a":{"y":2.5,"b":null}}`, `{"z":2}`, `{"q":[1,"x"]}`, `{"q":true}`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rows %q, want %q", got, want)
	}
}
