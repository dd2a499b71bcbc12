package datasets

import "testing"

// BenchmarkSampleRandomLlama3 times the random dataset with the Llama-3
// tokenizer: 1,024-token prompts, as `--dataset-name random` builds them.
func BenchmarkSampleRandomLlama3(b *testing.B) {
	tok := realTokenizer(b, "llama3.json")
	const n = 2000
	b.ReportAllocs()
	clock := startCPU()
	for b.Loop() {
		if _, err := SampleRandom(tok, RandomOptions{Env: &Env{NumPrompts: n, Seed: 0}, InputLen: 1024, OutputLen: 128}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(n*b.N), "µs/prompt")
	b.ReportMetric(float64(cpuSince(clock).Microseconds())/float64(n*b.N), "cpu-µs/prompt")
}
