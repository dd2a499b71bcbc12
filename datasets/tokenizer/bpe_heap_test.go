package tokenizer

import (
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// TestHeapMergeEqualsLinear merges long words both ways, the heap the
// tokenizer uses above heapThreshold symbols and the plain scan for the
// lowest rank, which is Hugging Face's merge order written out: the ids must
// be the same.
func TestHeapMergeEqualsLinear(t *testing.T) {
	paths := []string{"../../testdata/tokenizers/llama3.json", "../../testdata/tokenizers/qwen3.json", "testdata/tiny/tokenizer.json"}
	r := rand.New(rand.NewSource(1))
	alphabets := []string{"ab", "abcdefgh", "the quick brown fox", "aaaaaaab", "éèa中文", "0123456789"}
	tested := 0
	for _, path := range paths {
		tok, err := Load(path)
		if err != nil {
			continue
		}
		m, ok := tok.model.(*bpe)
		if !ok {
			continue
		}
		tested++
		ws := new(workspace)
		for k := 0; k < 300; k++ {
			alpha := []rune(alphabets[k%len(alphabets)])
			var b strings.Builder
			for n := heapThreshold + 1 + r.Intn(2000); n > 0; n-- {
				b.WriteRune(alpha[r.Intn(len(alpha))])
			}
			word := b.String()
			heapIDs := mergedIDs(m, word, ws, true)
			linearIDs := mergedIDs(m, word, ws, false)
			if !slices.Equal(heapIDs, linearIDs) {
				t.Fatalf("%s: %q: heap %v, linear %v", path, word, heapIDs, linearIDs)
			}
		}
	}
	if tested == 0 {
		t.Fatal("no BPE tokenizer loaded")
	}
}

func mergedIDs(m *bpe, word string, ws *workspace, heap bool) []int32 {
	syms := m.initialSymbols(nil, word, ws)
	for i := range syms {
		if syms[i].next >= 0 {
			r := m.rule(syms[i].id, syms[i+1].id)
			syms[i].rank, syms[i].newID = r.rank, r.newID
		} else {
			syms[i].rank = noMerge
		}
	}
	if heap {
		m.mergeWithHeap(syms, ws)
	} else {
		m.mergeLinear(syms)
	}
	var ids []int32
	for i := int32(0); i >= 0 && len(syms) > 0; i = syms[i].next {
		ids = append(ids, syms[i].id)
	}
	return ids
}

// BenchmarkEncodeLongWord encodes 1 MiB of letters without a space: one
// pre-token, merged on the heap. Its bytes/op is the memory a long
// whitespace-free run costs.
func BenchmarkEncodeLongWord(b *testing.B) {
	tok, err := Load("../../testdata/tokenizers/llama3.json")
	if err != nil {
		b.Skip(err)
	}
	r := rand.New(rand.NewSource(1))
	word := make([]byte, 1<<20)
	for i := range word {
		word[i] = byte('a' + r.Intn(26))
	}
	text := string(word)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		tok.Encode(nil, text, false)
	}
}
