package tokenizer

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// cacheCorpus is encoded by every load the cache tests compare.
var cacheCorpus = append([]string{"The tokenizer measures the latency of tokens.", "unseen wörds 12345 <s>x</s>"}, scannerSeeds...)

func encodeAll(t *testing.T, tok *Tokenizer) [][]int32 {
	t.Helper()
	var out [][]int32
	for _, s := range cacheCorpus {
		out = append(out, tok.Encode(nil, s, true))
	}
	return out
}

func loadWithCache(t *testing.T, path, dir string) *Tokenizer {
	t.Helper()
	t.Setenv("STAMPEDE_TOKENIZER_CACHE", dir)
	tok, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func cacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestBinCache loads a BPE tokenizer with the cache off, then through an
// empty cache (which writes it), then from the cache, then from a damaged
// cache, and requires the same ids every time; the damaged file is
// replaced by a good one.
func TestBinCache(t *testing.T) {
	path := filepath.Join("testdata", "tiny", "tokenizer.json")
	want := encodeAll(t, loadWithCache(t, path, "off"))
	dir := t.TempDir()
	check := func(stage string) []byte {
		t.Helper()
		if got := encodeAll(t, loadWithCache(t, path, dir)); !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("%s: ids %v, want %v", stage, got, want)
		}
		files := cacheFiles(t, dir)
		if len(files) != 1 || filepath.Ext(files[0]) != ".bpe" {
			t.Fatalf("%s: cache directory holds %v, want one .bpe file", stage, files)
		}
		data, err := os.ReadFile(filepath.Join(dir, files[0]))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	good := check("first load")
	if !slices.Equal(check("cached load"), good) {
		t.Fatal("a cached load rewrote the cache")
	}
	file := filepath.Join(dir, cacheFiles(t, dir)[0])
	for _, damage := range []struct {
		name string
		edit func([]byte) []byte
	}{
		{"flipped byte", func(b []byte) []byte { b[len(b)/2] ^= 0x40; return b }},
		{"truncated", func(b []byte) []byte { return b[:len(b)-5] }},
		{"other version", func(b []byte) []byte { b[8]++; return b }},
		{"empty", func([]byte) []byte { return nil }},
	} {
		if err := os.WriteFile(file, damage.edit(slices.Clone(good)), 0o644); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(check(damage.name), good) {
			t.Errorf("%s: the damaged cache file was not replaced by a good one", damage.name)
		}
	}
}

// TestBinCacheOff: with the cache off nothing is written.
func TestBinCacheOff(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("XDG_CACHE_HOME", dir)
	loadWithCache(t, filepath.Join("testdata", "tiny", "tokenizer.json"), "off")
	if files := cacheFiles(t, dir); len(files) != 0 {
		t.Errorf("cache off, yet %v written", files)
	}
}

// TestBinCacheConcurrent: loads racing on an empty cache all succeed alike
// and leave one complete file, no temporary ones.
func TestBinCacheConcurrent(t *testing.T) {
	path := filepath.Join("testdata", "tiny", "tokenizer.json")
	want := encodeAll(t, loadWithCache(t, path, "off"))
	dir := t.TempDir()
	t.Setenv("STAMPEDE_TOKENIZER_CACHE", dir)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	toks := make([]*Tokenizer, 8)
	for i := range toks {
		wg.Go(func() { toks[i], errs[i] = Load(path) })
	}
	wg.Wait()
	for i, tok := range toks {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if got := encodeAll(t, tok); !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("load %d: ids differ", i)
		}
	}
	if files := cacheFiles(t, dir); len(files) != 1 || filepath.Ext(files[0]) != ".bpe" {
		t.Errorf("cache directory holds %v, want one .bpe file", files)
	}
}

// TestDecodeBinCacheRejects: a file passing the checksum is still refused
// when an id is out of range or it belongs to another source.
func TestDecodeBinCacheRejects(t *testing.T) {
	m := &resolvedModel{text: "abab", ends: []uint32{1, 2, 4}, ids: []int32{0, 1, 2},
		merges: []resolvedMerge{{pairKey(0, 1), mergeRule{rank: 0, newID: 2}}}}
	sum := fileSum([]byte("source"))
	good := encodeBinCache(m, sum)
	got, err := decodeBinCache(good, sum)
	if err != nil || got.text != m.text || !slices.Equal(got.ids, m.ids) || !slices.Equal(got.merges, m.merges) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if _, err := decodeBinCache(good, fileSum([]byte("other"))); err == nil {
		t.Error("a cache of another source was accepted")
	}
	reseal := func(b []byte) []byte {
		binary.LittleEndian.PutUint32(b[56:], crc32.Checksum(b[binHeaderSize:], crcTable))
		return b
	}
	for name, edit := range map[string]func([]byte){
		"negative id":       func(b []byte) { binary.LittleEndian.PutUint32(b[binHeaderSize:], 0xFFFFFFFF) },
		"end past the text": func(b []byte) { binary.LittleEndian.PutUint32(b[binHeaderSize+4:], 99) },
		"negative rank":     func(b []byte) { binary.LittleEndian.PutUint32(b[len(b)-8:], 0x80000000) },
		"huge id":           func(b []byte) { binary.LittleEndian.PutUint32(b[len(b)-4:], maxTokenID+1) },
	} {
		b := slices.Clone(good)
		edit(b)
		if _, err := decodeBinCache(reseal(b), sum); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
