package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// entries lays out tokens as readVocab does.
func entries(toks []string, ids []int32) ([]byte, []uint32, []int32) {
	var arena []byte
	var ends []uint32
	for _, tok := range toks {
		arena = append(arena, tok...)
		ends = append(ends, uint32(len(arena)))
	}
	return arena, ends, ids
}

// TestVocabFromEntries checks the flat vocabulary against a Go map built
// the way Hugging Face reads the JSON object (a repeated token keeps its
// later id), for ids in order, shuffled, and with holes.
func TestVocabFromEntries(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name  string
		order func(n int) []int32
	}{
		{"dense", func(n int) []int32 {
			ids := make([]int32, n)
			for i := range ids {
				ids[i] = int32(i)
			}
			return ids
		}},
		{"shuffled", func(n int) []int32 {
			ids := make([]int32, n)
			for i, p := range rng.Perm(n) {
				ids[i] = int32(p)
			}
			return ids
		}},
		{"holes", func(n int) []int32 {
			ids := make([]int32, n)
			for i, p := range rng.Perm(n) {
				ids[i] = int32(3 * p)
			}
			return ids
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 5000
			toks := make([]string, n)
			for i := range toks {
				// Short and long tokens, and the empty one.
				toks[i] = strings.Repeat(fmt.Sprintf("%x", i), i%5)
			}
			toks[7] = toks[3] // a repeated token: the later id wins
			ids := tc.order(n)
			want := map[string]int32{}
			for i, tok := range toks {
				want[tok] = ids[i]
			}
			v, known, err := vocabFromEntries(entries(toks, ids))
			if err != nil {
				t.Fatal(err)
			}
			for tok, id := range want {
				if got, ok := v.lookup(tok); !ok || got != id {
					t.Fatalf("lookup(%q) = %d, %v; want %d", tok, got, ok, id)
				}
				if v.at(id) != tok || !known[id] {
					t.Fatalf("at(%d) = %q (known %v), want %q", id, v.at(id), known[id], tok)
				}
			}
			count := 0
			for _, k := range known {
				if k {
					count++
				}
			}
			if count != len(want) {
				t.Errorf("%d ids known, want %d (the earlier id of a repeated token is not)", count, len(want))
			}
			for _, miss := range []string{"zz", "0000000000000000000000000x", "\x00"} {
				if id, ok := v.lookup(miss); ok {
					t.Errorf("lookup(%q) = %d, want absent", miss, id)
				}
				if id, ok := v.lookupBytes([]byte(miss)); ok {
					t.Errorf("lookupBytes(%q) = %d, want absent", miss, id)
				}
			}
		})
	}
	if _, _, err := vocabFromEntries(entries([]string{"a", "b"}, []int32{4, 4})); err == nil || !strings.Contains(err.Error(), "share id 4") {
		t.Errorf("two tokens sharing an id: %v", err)
	}
	if _, _, err := vocabFromEntries(entries([]string{"a"}, []int32{-1})); err == nil {
		t.Error("a negative id was accepted")
	}
}

// TestMergeTable checks the open-addressing merge table against a map,
// later rules of a pair replacing earlier ones.
func TestMergeTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	want := map[[2]int32]mergeRule{}
	table := newMergeTable(20000)
	for i := range 20000 {
		a, b := rng.Int32N(300), rng.Int32N(300)
		if i%1000 == 0 {
			a, b = 0, 0 // the pair whose key is 0
		}
		r := mergeRule{rank: int32(i), newID: rng.Int32N(maxTokenID)}
		want[[2]int32{a, b}] = r
		table.put(a, b, r)
	}
	for p, r := range want {
		if got, ok := table.get(p[0], p[1]); !ok || got != r {
			t.Fatalf("get(%d, %d) = %+v, %v; want %+v", p[0], p[1], got, ok, r)
		}
	}
	for range 10000 {
		a, b := rng.Int32N(1000), rng.Int32N(1000)
		_, ok := table.get(a, b)
		if _, in := want[[2]int32{a, b}]; ok != in {
			t.Fatalf("get(%d, %d) found %v, want %v", a, b, ok, in)
		}
	}
	if got := len(table.toMap()); got != len(want) {
		t.Errorf("table holds %d rules, want %d", got, len(want))
	}
}

// TestTokenListSet: added tokens past the vocabulary and over one of its
// entries read back as set, the rest as before.
func TestTokenListSet(t *testing.T) {
	l := tokenList{base: newStrTable([]string{"a", "bb", "", "ccc"})}
	l.set(1, "bb") // the same token: nothing changes
	if l.over != nil {
		t.Error("setting an entry to its own token recorded an override")
	}
	l.set(6, "<s>")
	l.set(2, "x")
	want := []string{"a", "bb", "x", "ccc", "", "", "<s>"}
	if l.len() != len(want) {
		t.Fatalf("len %d, want %d", l.len(), len(want))
	}
	for id, tok := range want {
		if got := l.at(int32(id)); got != tok {
			t.Errorf("at(%d) = %q, want %q", id, got, tok)
		}
	}
}

// TestTrim: a tokenizer from the cache encodes and decodes alike after
// Trim dropped its mapped pages and emptied its caches.
func TestTrim(t *testing.T) {
	path := filepath.Join("testdata", "tiny", "tokenizer.json")
	dir := t.TempDir()
	loadWithCache(t, path, dir) // writes the cache
	tok := loadWithCache(t, path, dir)
	if tok.mapped == nil && littleEndian && mappable {
		t.Fatal("a cached load did not map the cache file")
	}
	want := encodeAll(t, tok)
	var text []string
	for _, ids := range want {
		text = append(text, tok.Decode(ids, false))
	}
	tok.Trim()
	if got := encodeAll(t, tok); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("after Trim: ids %v, want %v", got, want)
	}
	for i, ids := range want {
		if got := tok.Decode(ids, false); got != text[i] {
			t.Errorf("after Trim: Decode = %q, want %q", got, text[i])
		}
	}
}
