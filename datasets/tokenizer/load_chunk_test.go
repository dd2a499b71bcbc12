package tokenizer

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// withMergeChunk runs fn with merges resolved n at a time.
func withMergeChunk(t *testing.T, n int, fn func()) {
	t.Helper()
	saved := mergeChunk
	mergeChunk = n
	defer func() { mergeChunk = saved }()
	fn()
}

func tinyFile(t *testing.T) string {
	data, err := os.ReadFile(filepath.Join("testdata", "tiny", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestMergeChunks: resolving the merges in chunks on several goroutines
// builds the same table as one chunk, including a later duplicate of a pair
// overriding the earlier one across chunks.
func TestMergeChunks(t *testing.T) {
	src := tinyFile(t)
	// Repeat the first merge at the end: its rank becomes the last one.
	src = strings.Replace(src, `["Ġw","ith"]]`, `["Ġw","ith"],["Ġ","t"]]`, 1)
	load := func() map[uint64]mergeRule {
		tok, err := parseJSON([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return tok.model.(*bpe).merges.toMap()
	}
	var whole map[uint64]mergeRule
	withMergeChunk(t, 1<<20, func() { whole = load() })
	if r := whole[pairKey(32, 116)]; r.rank != 59 || r.newID != 256 {
		t.Fatalf("duplicate merge Ġ t = %+v, want rank 59 (the later entry), id 256", r)
	}
	for _, n := range []int{1, 2, 3, 7, 64} {
		withMergeChunk(t, n, func() {
			if got := load(); !maps.Equal(got, whole) {
				t.Errorf("chunks of %d: merge table differs from one chunk", n)
			}
		})
	}
}

// TestMergeChunkErrors: with errors in several chunks, the one of the
// lowest rank is reported, as a sequential read would.
func TestMergeChunkErrors(t *testing.T) {
	src := tinyFile(t)
	src = strings.Replace(src, `["e","s"]`, `["e","zz"]`, 1)            // rank 6
	src = strings.Replace(src, `["Ġw","ith"]]`, `["Ġw","ith","x"]]`, 1) // rank 58
	for _, n := range []int{1, 4, 1 << 20} {
		withMergeChunk(t, n, func() {
			_, err := parseJSON([]byte(src))
			if err == nil || !strings.Contains(err.Error(), `merge 6 ("e" "zz") uses a token missing`) {
				t.Errorf("chunks of %d: error %v, want the one of merge 6", n, err)
			}
		})
	}
}

// toMap lists a merge table's rules by pair.
func (t *mergeTable) toMap() map[uint64]mergeRule {
	out := map[uint64]mergeRule{}
	for _, s := range t.slots {
		if s.key != 0 {
			out[s.key-1] = s.mergeRule
		}
	}
	return out
}
