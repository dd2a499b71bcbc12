package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// benchFamilies are the golden families benchmarked, by golden file name.
var benchFamilies = []string{"llama3", "qwen3", "gpt4o", "deepseek_v3", "claude", "llama2", "gemma3", "bert",
	"unigram", "unigram_fallback"}

// benchText is the text a family is benchmarked on: its golden texts
// without added tokens, joined by newlines (testdata/gen/bench.mjs times
// Hugging Face on exactly the same text).
func benchText(tb testing.TB, family string) (*Tokenizer, string) {
	data, err := os.ReadFile(filepath.Join("testdata", "golden", family+".json"))
	if err != nil {
		tb.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(data, &g); err != nil {
		tb.Fatal(err)
	}
	tok := familyTokenizer(tb, g.File)
	var texts []string
	for _, c := range g.Cases {
		if !strings.HasPrefix(c.Label, "added-") {
			texts = append(texts, c.Text)
		}
	}
	return tok, strings.Join(texts, "\n")
}

// clocks measures wall time and the process's CPU time: on a shared
// machine the CPU figure (Mtok/cpu-s) is the one to compare, and
// testdata/gen/bench.mjs reports the same for Hugging Face.
type clocks struct {
	wall time.Time
	cpu  time.Duration
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startClocks() clocks { return clocks{time.Now(), processCPU()} }

func (c clocks) report(b *testing.B, tokens int) {
	b.ReportMetric(float64(tokens)/time.Since(c.wall).Seconds()/1e6, "Mtok/s")
	if cpu := processCPU() - c.cpu; cpu > 0 {
		b.ReportMetric(float64(tokens)/cpu.Seconds()/1e6, "Mtok/cpu-s")
	}
}

func BenchmarkEncode(b *testing.B) {
	for _, family := range benchFamilies {
		b.Run(family, func(b *testing.B) {
			tok, text := benchText(b, family)
			ids := tok.Encode(nil, text, false)
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			clock := startClocks()
			for b.Loop() {
				ids = tok.Encode(ids[:0], text, false)
			}
			clock.report(b, len(ids)*b.N)
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, family := range benchFamilies {
		b.Run(family, func(b *testing.B) {
			tok, text := benchText(b, family)
			ids := tok.Encode(nil, text, false)
			b.ReportAllocs()
			clock := startClocks()
			for b.Loop() {
				tok.Decode(ids, false)
			}
			clock.report(b, len(ids)*b.N)
		})
	}
}

func BenchmarkLoad(b *testing.B) {
	for _, file := range []string{"llama3.json", "qwen3.json", "gemma3.json", "bert.json", "testdata/unigram/tokenizer.json", "unigram_250k"} {
		name := strings.TrimSuffix(file, ".json")
		if strings.HasPrefix(file, "testdata/") {
			name = "unigram"
		}
		b.Run(name, func(b *testing.B) {
			path := filepath.Join(tokenizersDir(), file)
			switch {
			case strings.HasPrefix(file, "testdata/"):
				path = file
			case file == "unigram_250k":
				path = writeLargeUnigram(b)
			}
			if _, err := os.Stat(path); err != nil {
				b.Skipf("%s absent", path)
			}
			// The first load: nothing cached.
			b.Setenv("STAMPEDE_TOKENIZER_CACHE", "off")
			benchLoad(b, path)
		})
		b.Run(name+"-cached", func(b *testing.B) {
			path := filepath.Join(tokenizersDir(), file)
			if strings.HasPrefix(file, "testdata/") || file == "unigram_250k" {
				b.Skip("the binary cache holds BPE models only")
			}
			if _, err := os.Stat(path); err != nil {
				b.Skipf("%s absent", path)
			}
			b.Setenv("STAMPEDE_TOKENIZER_CACHE", b.TempDir())
			if _, err := Load(path); err != nil { // fills the cache
				b.Fatal(err)
			}
			benchLoad(b, path)
		})
	}
}

func benchLoad(b *testing.B, path string) {
	cpu := processCPU()
	for b.Loop() {
		if _, err := Load(path); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// TestEncodeAllocs pins the hot path: with a buffer of enough capacity,
// encoding ordinary text allocates nothing.
func TestEncodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool allocate")
	}
	tok, err := Load(filepath.Join("testdata", "tiny", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("The tokenizer measures the latency of 1234 tokens.\n  ", 20)
	ids := tok.Encode(nil, text, true)
	if n := testing.AllocsPerRun(100, func() { ids = tok.Encode(ids[:0], text, true) }); n != 0 {
		t.Errorf("Encode allocates %v times per call, want 0", n)
	}
}

// writeLargeUnigram writes a Unigram tokenizer.json the size of
// XLM-RoBERTa's (250,002 entries, 17 MB with its charsmap): the committed
// Unigram file's components around a vocabulary of made-up pieces.
func writeLargeUnigram(b *testing.B) string {
	data, err := os.ReadFile(filepath.Join("testdata", "unigram", "tokenizer.json"))
	if err != nil {
		b.Fatal(err)
	}
	var file map[string]json.RawMessage
	if err := json.Unmarshal(data, &file); err != nil {
		b.Fatal(err)
	}
	var model struct {
		Vocab [][2]any `json:"vocab"`
	}
	if err := json.Unmarshal(file["model"], &model); err != nil {
		b.Fatal(err)
	}
	vocab := model.Vocab
	seen := map[string]bool{}
	for _, e := range vocab {
		seen[e[0].(string)] = true
	}
	// Pieces grow from the real ones, so the trie branches as a trained
	// vocabulary's does.
	for i := 0; len(vocab) < 250_002; i++ {
		a, c := model.Vocab[i%len(model.Vocab)][0].(string), model.Vocab[(i*7919)%len(model.Vocab)][0].(string)
		piece := a + strings.TrimPrefix(c, "▁")
		if seen[piece] {
			piece = fmt.Sprintf("%s%d", piece, i)
		}
		seen[piece] = true
		vocab = append(vocab, [2]any{piece, -8 - float64(i%5000)/400})
	}
	file["model"], _ = json.Marshal(map[string]any{"type": "Unigram", "unk_id": 3, "vocab": vocab, "byte_fallback": false})
	out, err := json.Marshal(file)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "unigram_250k.json")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}
