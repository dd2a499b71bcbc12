package tokenizer

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/tiny/tokenizer.json")

// tinyCorpus trains testdata/tiny/tokenizer.json.
const tinyCorpus = `The quick brown fox jumps over the lazy dog. The tokenizer splits text
into pieces, and the model merges bytes into tokens. Benchmarks send prompts to
the server and measure the time to first token, the inter-token latency and the
throughput of the whole run. func main() { fmt.Println("hello, world") }
for i in range(10): print(i * i)  # squares
Requests, responses, streams, tokens, latency, throughput, concurrency.
The the the and and of of to to in in is is it it that that with with.
`

// tinyMerges is how many merges the tiny tokenizer learns.
const tinyMerges = 200

// trainTinyTokenizer trains a byte-level BPE on tinyCorpus (pre-tokenized
// with Llama-3's pattern) and returns it as tokenizer.json: Llama-3's
// layout, with a BOS added by TemplateProcessing and two special tokens.
// Training is deterministic: the most frequent pair wins, ties going to the
// lexicographically smallest.
func trainTinyTokenizer() []byte {
	words := map[string]int{}
	for _, m := range (scanner{next: func(s string, i int) int { return nextCl100k(s, i, 3) }}).appendMatches(nil, tinyCorpus) {
		words[tinyCorpus[m.start:m.end]]++
	}
	alphabet := func(s string) []string {
		out := make([]string, len(s))
		for i := 0; i < len(s); i++ {
			out[i] = string(byteToRune[s[i]])
		}
		return out
	}
	type word struct {
		symbols []string
		count   int
	}
	var corpus []word
	keys := make([]string, 0, len(words))
	for w := range words {
		keys = append(keys, w)
	}
	sort.Strings(keys)
	for _, w := range keys {
		corpus = append(corpus, word{alphabet(w), words[w]})
	}
	var vocab []string
	for b := 0; b < 256; b++ {
		vocab = append(vocab, string(byteToRune[b]))
	}
	var merges [][2]string
	for len(merges) < tinyMerges {
		pairs := map[[2]string]int{}
		for _, w := range corpus {
			for i := 0; i+1 < len(w.symbols); i++ {
				pairs[[2]string{w.symbols[i], w.symbols[i+1]}] += w.count
			}
		}
		var best [2]string
		bestCount := 0
		for p, c := range pairs {
			if c > bestCount || (c == bestCount && (p[0] < best[0] || (p[0] == best[0] && p[1] < best[1]))) {
				best, bestCount = p, c
			}
		}
		if bestCount < 2 {
			break
		}
		merges = append(merges, best)
		vocab = append(vocab, best[0]+best[1])
		for k := range corpus {
			s := corpus[k].symbols
			out := s[:0]
			for i := 0; i < len(s); i++ {
				if i+1 < len(s) && s[i] == best[0] && s[i+1] == best[1] {
					out = append(out, best[0]+best[1])
					i++
					continue
				}
				out = append(out, s[i])
			}
			corpus[k].symbols = out
		}
	}

	var b bytes.Buffer
	bos, eos := len(vocab), len(vocab)+1
	fmt.Fprintf(&b, `{"version":"1.0","truncation":null,"padding":null,"added_tokens":[`)
	fmt.Fprintf(&b, `{"id":%d,"content":"<|begin_of_text|>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},`, bos)
	fmt.Fprintf(&b, `{"id":%d,"content":"<|end_of_text|>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],`, eos)
	pattern, _ := json.Marshal(patternLlama3)
	fmt.Fprintf(&b, `"normalizer":null,"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":%s},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":false}]},`, pattern)
	fmt.Fprintf(&b, `"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<|begin_of_text|>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],"pair":[{"SpecialToken":{"id":"<|begin_of_text|>","type_id":0}},{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"<|begin_of_text|>","type_id":1}},{"Sequence":{"id":"B","type_id":1}}],"special_tokens":{"<|begin_of_text|>":{"id":"<|begin_of_text|>","ids":[%d],"tokens":["<|begin_of_text|>"]}}},`, bos)
	b.WriteString(`"decoder":{"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true},`)
	b.WriteString(`"model":{"type":"BPE","dropout":null,"unk_token":null,"continuing_subword_prefix":null,"end_of_word_suffix":null,"fuse_unk":false,"byte_fallback":false,"ignore_merges":true,"vocab":{`)
	for id, tok := range vocab {
		key, _ := json.Marshal(tok)
		if id > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:%d", key, id)
	}
	b.WriteString(`},"merges":[`)
	for i, m := range merges {
		pair, _ := json.Marshal(m[:])
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(pair)
	}
	b.WriteString("]}}\n")
	return b.Bytes()
}

// TestTinyTokenizer keeps the committed tiny tokenizer equal to what the
// trainer produces; run with -update to rewrite it.
func TestTinyTokenizer(t *testing.T) {
	path := filepath.Join("testdata", "tiny", "tokenizer.json")
	want := trainTinyTokenizer()
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale; run go test ./datasets/tokenizer -run TestTinyTokenizer -update", path)
	}
	tok, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	text := "The tokenizer measures the latency of tokens."
	ids := tok.Encode(nil, text, true)
	if ids[0] != tok.AllSpecialIDs()[0] || tok.NumSpecialTokensToAdd() != 1 {
		t.Errorf("Encode(addSpecial) = %v, want the BOS %d first", ids, tok.AllSpecialIDs()[0])
	}
	if len(ids) >= len(text)/2 {
		t.Errorf("%d ids for %d bytes: the merges are not being used", len(ids), len(text))
	}
	if got := tok.Decode(ids, true); got != text {
		t.Errorf("Decode = %q, want %q", got, text)
	}
}
