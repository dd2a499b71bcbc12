package datasets

import (
	"os"
	"strconv"
	"testing"
)

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

// floorPrompts is how many 8,192-token prompts the floor benchmarks build:
// $STAMPEDE_FLOOR_PROMPTS, default 2,000 (scripts/bench-prompts.sh sets
// it).
func floorPrompts() int {
	if n, err := strconv.Atoi(os.Getenv("STAMPEDE_FLOOR_PROMPTS")); err == nil && n > 0 {
		return n
	}
	return 2000
}

// BenchmarkSampleRandom8192 is the CPU of streaming floorPrompts random
// prompts of 8,192 tokens with the Llama-3 tokenizer, each iteration with
// the tokenizer's caches empty, as a run starts: the workload of
// BenchmarkEncodeFloor, which it is measured against.
func BenchmarkSampleRandom8192(b *testing.B) {
	n := floorPrompts()
	tok := realTokenizer(b, "llama3.json")
	var cpu int64
	for b.Loop() {
		tok.Trim()
		clock := startCPU()
		err := StreamRandom(tok, RandomOptions{Env: &Env{NumPrompts: n, Seed: 0}, InputLen: 8192, OutputLen: 128},
			func([]Request) error { return nil })
		cpu += int64(cpuSince(clock))
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpu)/1e3/float64(n*b.N), "cpu-µs/prompt")
}

// BenchmarkEncodeFloor is the floor of random sampling's CPU: one encode
// pass of the same prompts' text (BenchmarkSampleRandom8192's), each
// prompt once, in request order, on every core, with the tokenizer's
// caches empty at the start of each pass. Sampling can cost no less:
// Python's loop encodes each prompt's final text at least once.
func BenchmarkEncodeFloor(b *testing.B) {
	n := floorPrompts()
	tok := realTokenizer(b, "llama3.json")
	reqs, err := SampleRandom(tok, RandomOptions{Env: &Env{NumPrompts: n, Seed: 0}, InputLen: 8192, OutputLen: 128})
	if err != nil {
		b.Fatal(err)
	}
	var cpu int64
	for b.Loop() {
		tok.Trim()
		clock := startCPU()
		parallelEach(len(reqs), 0, func(k int) { tok.Encode(nil, reqs[k].Prompt, false) })
		cpu += int64(cpuSince(clock))
	}
	b.ReportMetric(float64(cpu)/1e3/float64(n*b.N), "cpu-µs/prompt")
}
