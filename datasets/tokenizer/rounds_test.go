package tokenizer

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unicode/utf8"
)

// Rounds give, round after round, what Decode and Encode give: a full
// round, and the round after a truncation at any token, on random ids
// as the random dataset draws them (runs of consecutive ids) and on ids
// drawn anywhere (whose bytes split characters).
func TestRoundsAreDecodeThenEncode(t *testing.T) {
	for _, file := range []string{"llama3.json", "qwen3.json", "gpt4o.json", "gemma3.json", "llama2.json", "bert.json"} {
		t.Run(file, func(t *testing.T) {
			tok := familyTokenizer(t, file)
			rng := rand.New(rand.NewPCG(1, uint64(len(file))))
			vocab := int32(tok.VocabSize())
			splits := 0
			for trial := range 12 {
				ids := make([]int32, 1500+rng.IntN(1500))
				start := rng.Int32N(vocab)
				for j := range ids {
					if trial%3 == 2 {
						ids[j] = rng.Int32N(vocab)
					} else {
						ids[j] = (start + int32(j)) % vocab
					}
				}
				r := tok.NewRounds()
				text := tok.Decode(ids, false)
				want := tok.Encode(nil, text, false)
				got := r.Round(slices.Clone(ids)[:0], slices.Clone(ids))
				if string(r.Text()) != text || !slices.Equal(got, want) {
					t.Fatalf("trial %d: Round differs from Decode + Encode", trial)
				}
				for cut := 0; cut < 4 && len(got) > 1; cut++ {
					k := 1 + rng.IntN(len(got)-1)
					if cut == 0 && tok.byteLevel.offs != nil {
						// A cut inside a character, where there is one.
						for j := len(got) - 1; j > len(got)/2; j-- {
							if !utf8.Valid(tok.appendByteLevel(nil, got[:j], false)) {
								k, splits = j, splits+1
								break
							}
						}
					}
					text = tok.Decode(got[:k], false)
					want = tok.Encode(nil, text, false)
					got = r.Truncated(got[:k])
					if string(r.Text()) != text {
						t.Fatalf("trial %d, cut at %d: text differs", trial, k)
					}
					if !slices.Equal(got, want) {
						t.Fatalf("trial %d, cut at %d: %d ids, want %d", trial, k, len(got), len(want))
					}
				}
				r.Done()
			}
			if tok.byteLevel.offs != nil && splits == 0 {
				t.Error("no cut inside a character was tried")
			}
		})
	}
}
