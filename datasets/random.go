package datasets

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/stampede-bench/stampede/datasets/pyrand"
	"github.com/stampede-bench/stampede/internal/py"
)

// RandomOptions are the `random` dataset's inputs (spec §g): the run's Env
// (--num-prompts; --seed, for the dataset's private numpy.default_rng;
// --request-id-prefix, request i getting prefix + i; Workers; Logf, which
// receives the lines Python logs: sampling ranges, token-mismatch
// warnings) and --random-* as parsed. random-mm and random-rerank build on
// them.
type RandomOptions struct {
	*Env
	InputLen   int        // --random-input-len (after --input-len)
	OutputLen  int        // --random-output-len (after --output-len)
	RangeRatio RangeRatio // --random-range-ratio
	PrefixLen  int        // --random-prefix-len
	BatchSize  int        // --random-batch-size; <= 1 means one prompt per request

	// window, when positive, is how many prompts are built at a time
	// (random_window.go); tests make it small.
	window int
}

// SampleRandom is StreamRandom's requests in one slice.
func SampleRandom(tok Tokenizer, o RandomOptions) ([]Request, error) {
	var all []Request
	err := StreamRandom(tok, o, func(batch []Request) error {
		all = append(all, batch...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return all, nil
}

// StreamRandom builds the `random` dataset exactly as Python's
// RandomDataset.sample does for the same seed and tokenizer, and hands
// the requests to emit in order, a window at a time (random_window.go):
//
//   - ns = tok.NumSpecialTokensToAdd(), real = max(0, InputLen - ns);
//     inputs are drawn from [⌊real(1-ri)⌋, ⌈real(1+ri)⌉], outputs from
//     [max(1, ⌊out(1-ro)⌋), max(1, ⌈out(1+ro)⌉)], then N offsets in
//     [0, vocab), all from numpy.default_rng(Seed) in that order;
//   - allowed = 0..vocab-1 without the special ids; a shared prefix of
//     PrefixLen draws of allowed[rng index] goes through the length fix;
//   - request i's tokens are prefix + allowed[(offset_i + i + j) mod
//     |allowed|] for j < input_len_i, length-fixed to PrefixLen +
//     input_len_i (decode → re-encode → pad with random ids or truncate, at
//     most 10 retries);
//   - the prompt is the final decoded text and PromptLen its token count.
//
// The tokenizer must be safe for concurrent use: decode/re-encode rounds run
// on Workers goroutines, and only the random padding is drawn in request
// order. The summary of the length fixes is logged once every request has
// been emitted.
func StreamRandom(tok Tokenizer, o RandomOptions, emit Emit) error {
	if tok == nil {
		return fmt.Errorf("dataset random: a tokenizer is required (drop --skip-tokenizer-init)")
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	ns := tok.NumSpecialTokensToAdd()
	realInput := max(0, o.InputLen-ns)
	minSampled := int(math.Floor(float64(realInput) * (1.0 - o.RangeRatio.Input)))
	if minTotal := o.PrefixLen + minSampled; minTotal < 1 {
		return valueError(fmt.Sprintf("--random-input-len is too small: with tokenizer special tokens %d and input range ratio %s, "+
			"the minimum possible total input tokens (prefix + sampled) is %d. Increase --random-input-len and/or --random-prefix-len, "+
			"or decrease the input range ratio so that prefix_len + floor(max(0, random_input_len - num_special)) * (1 - input_range_ratio) >= 1.",
			ns, py.FloatRepr(o.RangeRatio.Input), minTotal))
	}
	if o.Seed < 0 {
		return fmt.Errorf("--seed %d: numpy.random.default_rng needs a non-negative seed", o.Seed)
	}
	rng := pyrand.NewGenerator(uint64(o.Seed))
	vocab := tok.VocabSize()
	n := max(o.NumPrompts, 0)
	inputLens, outputLens, offsets, err := samplingParams(rng, n, o.RangeRatio, o.InputLen, o.OutputLen, tok, logf)
	if err != nil {
		return err
	}
	allowed := allowedTokens(vocab, tok.AllSpecialIDs())
	if len(allowed) == 0 {
		return fmt.Errorf("dataset random: the tokenizer's vocabulary (%d ids) has no non-special token", vocab)
	}
	draw := vocabDraw(rng, vocab)
	prefix, err := randomPrefix(tok, rng, allowed, o.PrefixLen, draw, logf)
	if err != nil {
		return err
	}
	batch := max(o.BatchSize, 1)
	g := &tokenWindows{tok: tok, prefix: prefix, prefixLen: o.PrefixLen, allowed: allowed,
		inputLens: inputLens, offsets: offsets, draw: draw, workers: o.Workers, window: o.window}
	if g.window <= 0 {
		g.window = promptWindow(o.PrefixLen+int(meanOf(inputLens)), batch)
	} else {
		g.window = max(batch, g.window/batch*batch)
	}
	mismatch := 0
	var reqs []Request
	err = g.build("random", nil, func(lo int, fixes []*lengthFix) error {
		reqs = reqs[:0]
		for j, f := range fixes {
			i := lo + j
			mismatch += f.mismatch
			reqs = append(reqs, Request{
				Prompt:            f.prompt,
				PromptLen:         f.count,
				ExpectedOutputLen: int(outputLens[i]),
				RequestID:         o.RequestIDPrefix + strconv.Itoa(i),
			})
		}
		if batch > 1 {
			return emit(batchRequests(reqs, batch, lo/batch, o.RequestIDPrefix))
		}
		return emit(reqs)
	})
	if err != nil {
		return err
	}
	logMismatch(logf, mismatch)
	return nil
}

// meanOf is the mean of v, 0 for none.
func meanOf(v []int64) float64 {
	if len(v) == 0 {
		return 0
	}
	total := 0.0
	for _, x := range v {
		total += float64(x)
	}
	return total / float64(len(v))
}

// samplingParams is get_sampling_params: the range check, then n input
// lengths, n output lengths and n vocabulary offsets drawn in that order.
func samplingParams(rng *pyrand.Generator, n int, rr RangeRatio, inputLen, outputLen int, tok Tokenizer, logf func(string, ...any)) (in, out, off []int64, err error) {
	if err := rr.check(); err != nil {
		return nil, nil, nil, err
	}
	realInput := max(0, inputLen-tok.NumSpecialTokensToAdd())
	inLo := int64(math.Floor(float64(realInput) * (1 - rr.Input)))
	inHi := int64(math.Ceil(float64(realInput) * (1 + rr.Input)))
	outLo := max(int64(math.Floor(float64(outputLen)*(1-rr.Output))), 1)
	outHi := max(int64(math.Ceil(float64(outputLen)*(1+rr.Output))), 1)
	logf("Sampling input_len from [%d, %d] and output_len from [%d, %d]", inLo, inHi, outLo, outHi)
	if in, err = rng.Integers(inLo, inHi+1, n); err != nil {
		return nil, nil, nil, fmt.Errorf("dataset random: input lengths: %w", err)
	}
	if out, err = rng.Integers(outLo, outHi+1, n); err != nil {
		return nil, nil, nil, fmt.Errorf("dataset random: output lengths: %w", err)
	}
	if off, err = rng.Integers(0, int64(tok.VocabSize()), n); err != nil {
		return nil, nil, nil, fmt.Errorf("dataset random: offsets (vocab size %d): %w", tok.VocabSize(), err)
	}
	return in, out, off, nil
}

// randomPrefix is RandomDataset.get_prefix: prefixLen draws of
// allowed[rng index], length-fixed to prefixLen.
func randomPrefix(tok Tokenizer, rng *pyrand.Generator, allowed []int32, prefixLen int, draw drawFunc, logf func(string, ...any)) ([]int32, error) {
	if prefixLen <= 0 {
		return nil, nil
	}
	idx, err := rng.Integers(0, int64(len(allowed)), prefixLen)
	if err != nil {
		return nil, err
	}
	ids := make([]int32, len(idx))
	for i, j := range idx {
		ids[i] = allowed[j]
	}
	fix := newLengthFix(ids, prefixLen)
	if err := fix.finish(tok, draw); err != nil {
		return nil, err
	}
	if fix.mismatch != 0 {
		logf("Prefix tokenization produced %d %s tokens than expected after decoding and re-encoding. "+
			"This is expected due to the imperfect nature of the sampling procedure", abs(fix.mismatch), moreOrFewer(fix.mismatch))
	}
	return fix.ids, nil
}

// parallelEach calls fn(k) for every k in [0, n), in increasing order of k
// per goroutine, on workers goroutines (<= 0: one per usable CPU).
func parallelEach(n, workers int, fn func(k int)) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for k := int(next.Add(1) - 1); k < n; k = int(next.Add(1) - 1) {
				fn(k)
			}
		})
	}
	wg.Wait()
}

// tokenSequence is generate_token_sequence before its length fix: the
// prefix ids, then allowed[(offset + index + j) mod |allowed|] for j <
// inputLen, to be fixed to prefixLen + inputLen (prefixLen is the
// configured length, which the prefix's own fix may have missed).
func tokenSequence(prefix []int32, prefixLen int, allowed []int32, inputLen int, offset int64, index int) *lengthFix {
	// Re-encoding decoded random ids finds up to ~14 % more: room for them.
	n := len(prefix) + inputLen
	ids := make([]int32, 0, n+n/4)
	ids = append(ids, prefix...)
	at := int((offset + int64(index)) % int64(len(allowed)))
	for range inputLen {
		ids = append(ids, allowed[at])
		if at++; at == len(allowed) {
			at = 0
		}
	}
	return newLengthFix(ids, prefixLen+inputLen)
}

// batchRequests groups consecutive requests into one request per batch
// (pooling benchmarks): the prompts become a list, the lengths add up, the
// output length is 0 and the id is prefix + batch index, the first batch
// being number first.
func batchRequests(reqs []Request, size, first int, idPrefix string) []Request {
	out := make([]Request, 0, (len(reqs)+size-1)/size)
	for i := 0; i < len(reqs); i += size {
		batch := reqs[i:min(i+size, len(reqs))]
		r := Request{PromptList: make([]string, len(batch)), RequestID: idPrefix + strconv.Itoa(first+i/size)}
		for j, b := range batch {
			r.PromptList[j] = b.Prompt
			r.PromptLen += b.PromptLen
		}
		out = append(out, r)
	}
	return out
}

// allowedTokens is 0..vocab-1 without the special ids, ascending (the
// order Python's set difference of small ints iterates in).
func allowedTokens(vocab int, special []int32) []int32 {
	banned := make(map[int32]bool, len(special))
	for _, id := range special {
		banned[id] = true
	}
	out := make([]int32, 0, vocab)
	for id := range int32(vocab) {
		if !banned[id] {
			out = append(out, id)
		}
	}
	return out
}

func toInt32(v []int64) []int32 {
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func moreOrFewer(x int) string {
	if x > 0 {
		return "more"
	}
	return "fewer"
}

// RandomFlags are the random* datasets' options.
type RandomFlags struct {
	RandomInputLen   int    `long:"random-input-len" default:"1024" copy-of:"input-len" description:"Mean input tokens per request."`
	RandomOutputLen  int    `long:"random-output-len" default:"128" copy-of:"output-len" description:"Mean output tokens per request."`
	RandomRangeRatio string `long:"random-range-ratio" default:"0.0" description:"Spread r in [0, 1) of the lengths around their mean, or JSON {\"input\": r, \"output\": r}."`
	RandomPrefixLen  int    `long:"random-prefix-len" default:"0" description:"Tokens of a random prefix shared by every prompt."`
	RandomBatchSize  int    `long:"random-batch-size" default:"1" description:"Inputs per request (pooling backends)."`
	NoReranker       bool   `long:"no-reranker" description:"random-rerank: the model is not a native reranker."`
}

// randomOptions are env's RandomOptions: --random-range-ratio is parsed
// here, a ValueError as in Python.
func randomOptions(env *Env) (RandomOptions, error) {
	f := &env.Flags.RandomFlags
	ratio, err := ParseRangeRatio(f.RandomRangeRatio)
	if err != nil {
		return RandomOptions{}, valueError(err.Error())
	}
	return RandomOptions{Env: env, InputLen: f.RandomInputLen, OutputLen: f.RandomOutputLen,
		RangeRatio: ratio, PrefixLen: f.RandomPrefixLen, BatchSize: f.RandomBatchSize}, nil
}

var randomDataset = &Dataset{
	Name:            "random",
	Synthetic:       true,
	ExactOutputLen:  true,
	AlignWithServer: true,
	Stream: func(env *Env, emit Emit) error {
		o, err := randomOptions(env)
		if err != nil {
			return err
		}
		return StreamRandom(env.Tokenizer, o, emit)
	},
}
