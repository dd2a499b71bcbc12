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
// when an offset, slot or id is out of range or it belongs to another
// source.
func TestDecodeBinCacheRejects(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "tiny", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, m, err := parseJSONWith(data, nil, true)
	if err != nil || m == nil {
		t.Fatalf("resolve: %v, %v", m, err)
	}
	sum := fileSum(data)
	good := encodeBinCache(m, sum)
	got, err := decodeBinCache(aligned(good), sum)
	if err != nil || got.tokens.text != m.tokens.text || !slices.Equal(got.known, m.known) ||
		!slices.Equal(got.merges.slots, m.merges.slots) || !slices.Equal(got.vocab.slots, m.vocab.slots) {
		t.Fatalf("round trip: %v", err)
	}
	if _, err := decodeBinCache(aligned(good), fileSum([]byte("other"))); err == nil {
		t.Error("a cache of another source was accepted")
	}
	le := binary.LittleEndian
	reseal := func(b []byte) []byte {
		le.PutUint32(b[52:], crc32.Checksum(b[binHeaderSize:], crcTable))
		return b
	}
	// section returns where section i starts in b.
	section := func(b []byte, i int) int {
		at := binHeaderSize
		for k := range i {
			at = align8(at + int(le.Uint32(b[72+4*k:])))
		}
		return at
	}
	firstMerge := func(b []byte) int {
		for at := section(b, secMerges); ; at += 16 {
			if le.Uint64(b[at:]) != 0 {
				return at
			}
		}
	}
	firstSlot := func(b []byte) int {
		for at := section(b, secByteSlots); ; at += 8 {
			if le.Uint64(b[at:]) != 0 {
				return at
			}
		}
	}
	for name, edit := range map[string]func([]byte){
		"offset past the text": func(b []byte) { le.PutUint32(b[section(b, secByteOffs)+4:], 1<<30) },
		"slot past the ids":    func(b []byte) { le.PutUint32(b[firstSlot(b):], 1<<20) },
		"unknown flag":         func(b []byte) { b[section(b, secKnown)] = 7 },
		"negative rank":        func(b []byte) { le.PutUint32(b[firstMerge(b)+8:], 0x80000000) },
		"huge merged id":       func(b []byte) { le.PutUint32(b[firstMerge(b)+12:], maxTokenID+1) },
		"huge pair id":         func(b []byte) { le.PutUint64(b[firstMerge(b):], 1<<62) },
		"truncated section":    func(b []byte) { le.PutUint32(b[72+4*secMerges:], 8) },
	} {
		b := slices.Clone(good)
		edit(b)
		if _, err := decodeBinCache(aligned(reseal(b)), sum); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// aligned copies b to 8-aligned memory, as a mapping is.
func aligned(b []byte) []byte {
	words := make([]uint64, (len(b)+7)/8)
	out := bytesOf(words)[:len(b)]
	copy(out, b)
	return out
}
