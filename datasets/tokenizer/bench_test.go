package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// benchFamilies are the golden families benchmarked, by golden file name.
var benchFamilies = []string{"llama3", "qwen3", "gpt4o", "deepseek_v3", "claude", "llama2", "gemma3", "bert"}

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
	for _, file := range []string{"llama3.json", "qwen3.json", "gemma3.json", "bert.json"} {
		b.Run(strings.TrimSuffix(file, ".json"), func(b *testing.B) {
			path := filepath.Join(tokenizersDir(), file)
			if _, err := os.Stat(path); err != nil {
				b.Skipf("%s absent", path)
			}
			cpu := processCPU()
			for b.Loop() {
				if _, err := Load(path); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		})
	}
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
