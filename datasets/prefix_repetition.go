package datasets

import (
	"fmt"
)

// PrefixRepetitionOptions are the `prefix_repetition` dataset's inputs.
type PrefixRepetitionOptions struct {
	NumPrompts     int   // --num-prompts
	PrefixLen      int   // --prefix-repetition-prefix-len
	SuffixLen      int   // --prefix-repetition-suffix-len
	NumPrefixes    int   // --prefix-repetition-num-prefixes
	OutputLen      int   // --prefix-repetition-output-len
	Seed           int64 // --seed
	DisableShuffle bool  // --disable-shuffle
	// Globals is the run's Python-global RNG pair, which this dataset
	// reseeds with Seed and then consumes (numpy for tokens, random for the
	// shuffle); the arrival gaps continue from the numpy state it leaves.
	Globals PythonGlobals
	Logf    func(format string, args ...any)
}

// SamplePrefixRepetition is PrefixRepetitionRandomDataset: after reseeding
// both global generators with Seed, for each of NumPrefixes prefixes draw
// PrefixLen ids with numpy.random.randint(0, vocab) and length-fix them,
// then N//k (+1 for the first N%k prefixes) requests each with a fresh
// length-fixed random suffix. The prompt is decode(prefix + suffix),
// PromptLen is PrefixLen + SuffixLen as fixed, requests carry no id, and
// the list is shuffled with Python's random unless DisableShuffle.
//
// Every draw, including the length fix's padding, comes from the one
// global stream in order, so the work is sequential.
func SamplePrefixRepetition(tok Tokenizer, o PrefixRepetitionOptions) ([]Request, error) {
	if tok == nil {
		return nil, fmt.Errorf("dataset prefix_repetition: a tokenizer is required (drop --skip-tokenizer-init)")
	}
	if o.NumPrefixes <= 0 {
		return nil, fmt.Errorf("--prefix-repetition-num-prefixes %d: must be at least 1", o.NumPrefixes)
	}
	perPrefix, remainder := o.NumPrompts/o.NumPrefixes, o.NumPrompts%o.NumPrefixes
	if perPrefix == 0 {
		return nil, valueError(fmt.Sprintf("num_requests (%d) must be greater than or equal to num_prefixes (%d)", o.NumPrompts, o.NumPrefixes))
	}
	g := o.Globals.orPrivate(o.Seed)
	g.Random.Seed(o.Seed)
	g.NumPy.Seed(uint32(o.Seed))
	vocab := int64(tok.VocabSize())
	draw := func(n int) ([]int32, error) {
		v, err := g.NumPy.RandInt(0, vocab, n)
		if err != nil {
			return nil, err
		}
		return toInt32(v), nil
	}
	exact := func(n int) ([]int32, int, error) {
		ids, err := draw(n)
		if err != nil {
			return nil, 0, err
		}
		f := newLengthFix(ids, n)
		if err := f.finish(tok, draw); err != nil {
			return nil, 0, err
		}
		return f.ids, f.mismatch, nil
	}

	reqs := make([]Request, 0, o.NumPrompts)
	mismatch := 0
	for p := range o.NumPrefixes {
		prefix, m, err := exact(o.PrefixLen)
		if err != nil {
			return nil, fmt.Errorf("dataset prefix_repetition: %w", err)
		}
		mismatch += m
		count := perPrefix
		if p < remainder {
			count++
		}
		for range count {
			suffix, m, err := exact(o.SuffixLen)
			if err != nil {
				return nil, fmt.Errorf("dataset prefix_repetition: %w", err)
			}
			mismatch += m
			combined := append(append(make([]int32, 0, len(prefix)+len(suffix)), prefix...), suffix...)
			reqs = append(reqs, Request{Prompt: tok.Decode(combined, false), PromptLen: len(combined), ExpectedOutputLen: o.OutputLen})
		}
	}
	logMismatch(o.Logf, mismatch)
	if !o.DisableShuffle {
		g.Random.Shuffle(len(reqs), func(i, j int) { reqs[i], reqs[j] = reqs[j], reqs[i] })
	}
	return reqs, nil
}

// PrefixRepetitionFlags are the prefix_repetition dataset's options.
type PrefixRepetitionFlags struct {
	PrefixRepetitionPrefixLen   int `long:"prefix-repetition-prefix-len" default:"256" description:"Tokens per shared prefix."`
	PrefixRepetitionSuffixLen   int `long:"prefix-repetition-suffix-len" default:"256" description:"Unique suffix tokens per request."`
	PrefixRepetitionNumPrefixes int `long:"prefix-repetition-num-prefixes" default:"10" description:"Number of distinct prefixes."`
	PrefixRepetitionOutputLen   int `long:"prefix-repetition-output-len" default:"128" copy-of:"output-len" description:"Output tokens per request."`
}

var prefixRepetitionDataset = &Dataset{
	Name:            "prefix_repetition",
	Synthetic:       true,
	AlignWithServer: true,
	Sample: func(env *Env) ([]Request, error) {
		f := &env.Flags.PrefixRepetitionFlags
		return SamplePrefixRepetition(env.Tokenizer, PrefixRepetitionOptions{
			NumPrompts: env.NumPrompts, PrefixLen: f.PrefixRepetitionPrefixLen,
			SuffixLen: f.PrefixRepetitionSuffixLen, NumPrefixes: f.PrefixRepetitionNumPrefixes,
			OutputLen: f.PrefixRepetitionOutputLen, Seed: env.Seed, DisableShuffle: env.DisableShuffle,
			Globals: env.Globals, Logf: env.Logf,
		})
	},
}
