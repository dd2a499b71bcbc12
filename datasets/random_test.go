package datasets

import (
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/datasets/pyrand"
	"github.com/stampede-bench/stampede/internal/py"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// referenceFix is gen_prompt_decode_to_target_len transcribed line by line,
// drawing from rng as it goes.
func referenceFix(tok Tokenizer, seq []int32, target int, rng *pyrand.Generator) (string, []int32, int) {
	remain, mismatch := maxLengthFixRetries, 0
	var prompt string
	for {
		prompt = tok.Decode(seq, false)
		seq = tok.Encode(nil, prompt, false)
		if remain <= 0 {
			if len(seq) != target {
				mismatch = len(seq) - target
			}
			break
		}
		if len(seq) == target {
			break
		} else if len(seq) < target {
			extra, _ := rng.Integers(0, int64(tok.VocabSize()), target-len(seq))
			seq = append(seq, toInt32(extra)...)
		} else {
			seq = seq[:target]
		}
		remain--
	}
	return prompt, seq, mismatch
}

// referenceSampling is get_sampling_params written out: n input lengths,
// n output lengths and n vocabulary offsets, in that order from rng.
func referenceSampling(tok Tokenizer, rng *pyrand.Generator, n, inputLen, outputLen int, rr RangeRatio) (in, out, off []int64) {
	real := max(0, inputLen-tok.NumSpecialTokensToAdd())
	in, _ = rng.Integers(int64(float64(real)*(1-rr.Input)), int64(math.Ceil(float64(real)*(1+rr.Input)))+1, n)
	out, _ = rng.Integers(max(1, int64(float64(outputLen)*(1-rr.Output))), max(1, int64(math.Ceil(float64(outputLen)*(1+rr.Output))))+1, n)
	off, _ = rng.Integers(0, int64(tok.VocabSize()), n)
	return in, out, off
}

// referenceSequence is generate_token_sequence's ids for request i before
// the length fix: the prefix, then inputLen allowed ids from the offset on.
func referenceSequence(prefix, allowed []int32, inputLen int, offset int64, i int) []int32 {
	seq := append([]int32(nil), prefix...)
	for j := range inputLen {
		seq = append(seq, allowed[(offset+int64(i)+int64(j))%int64(len(allowed))])
	}
	return seq
}

// referenceRandom is RandomDataset.sample without batching, sequential.
func referenceRandom(tok Tokenizer, o RandomOptions) []Request {
	rng := pyrand.NewGenerator(uint64(o.Seed))
	in, out, off := referenceSampling(tok, rng, o.NumPrompts, o.InputLen, o.OutputLen, o.RangeRatio)
	allowed := allowedTokens(tok.VocabSize(), tok.AllSpecialIDs())
	var prefix []int32
	if o.PrefixLen > 0 {
		idx, _ := rng.Integers(0, int64(len(allowed)), o.PrefixLen)
		for _, j := range idx {
			prefix = append(prefix, allowed[j])
		}
		_, prefix, _ = referenceFix(tok, prefix, o.PrefixLen, rng)
	}
	var reqs []Request
	for i := range o.NumPrompts {
		seq := referenceSequence(prefix, allowed, int(in[i]), off[i], i)
		prompt, ids, _ := referenceFix(tok, seq, o.PrefixLen+int(in[i]), rng)
		reqs = append(reqs, Request{Prompt: prompt, PromptLen: len(ids), ExpectedOutputLen: int(out[i]), RequestID: o.RequestIDPrefix + itoa(i)})
	}
	return reqs
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestSampleRandomMatchesSequentialReference(t *testing.T) {
	tok := newBPETokenizer()
	tests := []RandomOptions{
		{Env: &Env{NumPrompts: 40, Seed: 0}, InputLen: 64, OutputLen: 16},
		{Env: &Env{NumPrompts: 25, Seed: 7}, InputLen: 100, OutputLen: 32, RangeRatio: RangeRatio{0.5, 0.25}, PrefixLen: 20},
		{Env: &Env{NumPrompts: 10, Seed: 3}, InputLen: 2, OutputLen: 1, PrefixLen: 5},
	}
	for _, o := range tests {
		o.RequestIDPrefix = "bench-x-"
		want := referenceRandom(tok, o)
		for _, workers := range []int{1, 3} {
			o.Workers = workers
			got, err := SampleRandom(tok, o)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				for i := range got {
					if i < len(want) && !reflect.DeepEqual(got[i], want[i]) {
						t.Fatalf("seed %d workers %d: request %d = %+v, want %+v", o.Seed, workers, i, got[i], want[i])
					}
				}
				t.Fatalf("seed %d workers %d: %d requests, want %d", o.Seed, workers, len(got), len(want))
			}
		}
	}
}

func TestSampleRandomLengthsAndIDs(t *testing.T) {
	tok := newBPETokenizer()
	o := RandomOptions{Env: &Env{NumPrompts: 60, Seed: 11, RequestIDPrefix: "p-"}, InputLen: 81, OutputLen: 20, RangeRatio: RangeRatio{0.2, 0.5}}
	reqs, err := SampleRandom(tok, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 60 {
		t.Fatalf("got %d requests, want 60", len(reqs))
	}
	exact := 0
	for i, r := range reqs {
		if r.RequestID != "p-"+itoa(i) {
			t.Errorf("request %d id %q", i, r.RequestID)
		}
		// real = 80: input in [64, 96]; output in [10, 30].
		if r.ExpectedOutputLen < 10 || r.ExpectedOutputLen > 30 {
			t.Errorf("request %d output len %d outside [10, 30]", i, r.ExpectedOutputLen)
		}
		if got := len(tok.Encode(nil, r.Prompt, false)); got != r.PromptLen {
			t.Errorf("request %d PromptLen %d, but its prompt encodes to %d tokens", i, r.PromptLen, got)
		}
		if r.PromptLen >= 64 && r.PromptLen <= 96 {
			exact++
		}
	}
	if exact < 55 {
		t.Errorf("only %d of 60 prompts landed in the sampled length range", exact)
	}
}

func TestSampleRandomBatches(t *testing.T) {
	tok := newBPETokenizer()
	o := RandomOptions{Env: &Env{NumPrompts: 7, Seed: 1, RequestIDPrefix: "b-"}, InputLen: 10, OutputLen: 4}
	single, err := SampleRandom(tok, o)
	if err != nil {
		t.Fatal(err)
	}
	o.BatchSize = 3
	batched, err := SampleRandom(tok, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(batched) != 3 {
		t.Fatalf("7 prompts in batches of 3 gave %d requests, want 3", len(batched))
	}
	last := batched[2]
	if last.RequestID != "b-2" || len(last.PromptList) != 1 || last.PromptList[0] != single[6].Prompt || last.PromptLen != single[6].PromptLen {
		t.Errorf("last batch = %+v, want one prompt equal to request 6", last)
	}
	if first := batched[0]; first.PromptLen != single[0].PromptLen+single[1].PromptLen+single[2].PromptLen || first.ExpectedOutputLen != 0 {
		t.Errorf("first batch PromptLen %d / output %d, want the sum of three and 0", first.PromptLen, first.ExpectedOutputLen)
	}
}

func TestSampleRandomErrors(t *testing.T) {
	tok := newBPETokenizer()
	tests := []struct {
		name string
		o    RandomOptions
		want string
	}{
		{"input too small", RandomOptions{Env: &Env{NumPrompts: 1}, InputLen: 1, OutputLen: 1},
			"--random-input-len is too small: with tokenizer special tokens 1 and input range ratio 0.0, the minimum possible total input tokens (prefix + sampled) is 0. Increase --random-input-len and/or --random-prefix-len, or decrease the input range ratio so that prefix_len + floor(max(0, random_input_len - num_special)) * (1 - input_range_ratio) >= 1."},
		{"input ratio", RandomOptions{Env: &Env{NumPrompts: 1}, InputLen: 100, OutputLen: 1, RangeRatio: RangeRatio{-0.5, 0}}, "input_range_ratio must be in [0, 1)."},
		{"output ratio", RandomOptions{Env: &Env{NumPrompts: 1}, InputLen: 100, OutputLen: 1, RangeRatio: RangeRatio{0, 1}}, "output_range_ratio must be in [0, 1)."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := SampleRandom(tok, tt.o)
			var pe *py.Error
			if !errors.As(err, &pe) || pe.Type != "ValueError" || err.Error() != tt.want {
				t.Fatalf("error = %v, want ValueError %q", err, tt.want)
			}
		})
	}
}

func TestParseRangeRatio(t *testing.T) {
	tests := []struct {
		in      string
		want    RangeRatio
		wantErr string
	}{
		{"0.0", RangeRatio{0, 0}, ""},
		{" 0.25 ", RangeRatio{0.25, 0.25}, ""},
		{"1_0e-1", RangeRatio{1, 1}, ""},
		{`{"input": 0.3, "output": 0.5}`, RangeRatio{0.3, 0.5}, ""},
		{`{"output": 0.5, "extra": 1}`, RangeRatio{}, "When range_ratio is a dict it must contain 'input' and 'output' keys, got: ['extra', 'output']"},
		{"abc", RangeRatio{}, "--random-range-ratio \"abc\""},
		{`{"input": [1], "output": 0}`, RangeRatio{}, `"input" must be a number`},
	}
	for _, tt := range tests {
		got, err := ParseRangeRatio(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseRangeRatio(%q) error = %v, want it to contain %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseRangeRatio(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

// TestSampleRandomGolden pins the first prompts of a fixed configuration so
// that a change in the RNG ports or the length fix shows up as a diff.
// Regenerate with: go test ./datasets -run Golden -update
func TestSampleRandomGolden(t *testing.T) {
	reqs, err := SampleRandom(newBPETokenizer(), RandomOptions{Env: &Env{NumPrompts: 4, Seed: 42, RequestIDPrefix: "g-"}, InputLen: 24, OutputLen: 8, RangeRatio: RangeRatio{0.3, 0.3}, PrefixLen: 4})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.MarshalIndent(reqs, "", " ")
	path := filepath.Join("testdata", "random_golden.json")
	if *update {
		if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if strings.TrimSpace(string(want)) != string(got) {
		t.Errorf("random dataset changed:\n got %s\nwant %s", got, want)
	}
}

func TestSampleRandomRerank(t *testing.T) {
	tok := newBPETokenizer()
	tests := []struct {
		name       string
		o          RandomRerankOptions
		wantGroups []int // documents per request
		sep        int
	}{
		{"reranker", RandomRerankOptions{RandomOptions: RandomOptions{Env: &Env{NumPrompts: 5, Seed: 1}, InputLen: 40, BatchSize: 2}}, []int{2, 2, 1}, 1},
		{"no reranker", RandomRerankOptions{RandomOptions: RandomOptions{Env: &Env{NumPrompts: 5, Seed: 1}, InputLen: 20, BatchSize: 3}, NoReranker: true}, []int{2, 2}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reqs, err := SampleRandomRerank(tok, tt.o)
			if err != nil {
				t.Fatal(err)
			}
			if len(reqs) != len(tt.wantGroups) {
				t.Fatalf("%d requests, want %d", len(reqs), len(tt.wantGroups))
			}
			query := reqs[0].PromptList[0]
			qLen := len(tok.Encode(nil, query, false))
			for i, r := range reqs {
				if r.PromptList[0] != query || len(r.PromptList)-1 != tt.wantGroups[i] || r.RequestID != itoa(i) || r.ExpectedOutputLen != 0 {
					t.Errorf("request %d = %+v", i, r)
				}
				want := qLen
				if tt.sep > 0 {
					want = (qLen + 1) * tt.wantGroups[i]
				}
				for _, d := range r.PromptList[1:] {
					want += len(tok.Encode(nil, d, false))
				}
				if r.PromptLen != want {
					t.Errorf("request %d PromptLen %d, want %d", i, r.PromptLen, want)
				}
			}
		})
	}
	if _, err := SampleRandomRerank(tok, RandomRerankOptions{RandomOptions: RandomOptions{Env: &Env{NumPrompts: 1}, InputLen: 20, BatchSize: 3}, NoReranker: true}); err == nil {
		t.Error("--no-reranker with one prompt accepted")
	}
}
