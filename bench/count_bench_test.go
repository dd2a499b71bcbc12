package bench

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/datasets/tokenizer"
)

// BenchmarkCountGeneratedText is what re-tokenizing one request's
// generated text costs (spec §d, a server without usage): 4,500 bytes of
// made-up words, its token count reported as "tokens". Done on a shard's
// thread at each request's end it would hold that loop for this long;
// stampede keeps the text and counts after the run instead
// (bench.run.computeOptions).
func BenchmarkCountGeneratedText(b *testing.B) {
	tok, err := tokenizer.Load("../testdata/tokenizers/llama3.json")
	if err != nil {
		b.Skipf("run scripts/fetch-tokenizers.sh: %v", err)
	}
	// Varied words, so a word cache in the tokenizer does not flatter it.
	var sb strings.Builder
	rng := rand.New(rand.NewPCG(1, 2))
	for sb.Len() < 4500 {
		sb.WriteByte(' ')
		for range 2 + rng.IntN(8) {
			sb.WriteByte(byte('a' + rng.IntN(26)))
		}
		if rng.IntN(12) == 0 {
			sb.WriteString(".")
		}
	}
	text := sb.String()
	n := len(tok.Encode(nil, text, false))
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		tok.Encode(nil, text, false)
	}
	b.ReportMetric(float64(n), "tokens")
}
