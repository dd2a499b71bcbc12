package datasets

import (
	"fmt"
)

// SamplePrefixRepetition is PrefixRepetitionRandomDataset: after reseeding
// both of Python's global generators (env.Globals) with --seed, for each
// of --prefix-repetition-num-prefixes prefixes draw
// --prefix-repetition-prefix-len ids with numpy.random.randint(0, vocab)
// and length-fix them, then N//k (+1 for the first N%k prefixes) requests each with a fresh
// length-fixed random suffix. The prompt is decode(prefix + suffix),
// PromptLen is prefix + suffix length as fixed, ExpectedOutputLen is
// --prefix-repetition-output-len, requests carry no id, and the list is
// shuffled with Python's random unless --disable-shuffle. The arrival gaps
// continue from the numpy state this leaves.
//
// Every draw, including the length fix's padding, comes from the one
// global stream in order, so the work is sequential.
func SamplePrefixRepetition(env *Env) ([]Request, error) {
	tok, f := env.Tokenizer, &env.Flags.PrefixRepetitionFlags
	if tok == nil {
		return nil, fmt.Errorf("dataset prefix_repetition: a tokenizer is required (drop --skip-tokenizer-init)")
	}
	if f.PrefixRepetitionNumPrefixes <= 0 {
		return nil, fmt.Errorf("--prefix-repetition-num-prefixes %d: must be at least 1", f.PrefixRepetitionNumPrefixes)
	}
	perPrefix, remainder := env.NumPrompts/f.PrefixRepetitionNumPrefixes, env.NumPrompts%f.PrefixRepetitionNumPrefixes
	if perPrefix == 0 {
		return nil, valueError(fmt.Sprintf("num_requests (%d) must be greater than or equal to num_prefixes (%d)", env.NumPrompts, f.PrefixRepetitionNumPrefixes))
	}
	g := env.Globals.orPrivate(env.Seed)
	g.Random.Seed(env.Seed)
	g.NumPy.Seed(uint32(env.Seed))
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

	reqs := make([]Request, 0, env.NumPrompts)
	mismatch := 0
	for p := range f.PrefixRepetitionNumPrefixes {
		prefix, m, err := exact(f.PrefixRepetitionPrefixLen)
		if err != nil {
			return nil, fmt.Errorf("dataset prefix_repetition: %w", err)
		}
		mismatch += m
		count := perPrefix
		if p < remainder {
			count++
		}
		for range count {
			suffix, m, err := exact(f.PrefixRepetitionSuffixLen)
			if err != nil {
				return nil, fmt.Errorf("dataset prefix_repetition: %w", err)
			}
			mismatch += m
			combined := append(append(make([]int32, 0, len(prefix)+len(suffix)), prefix...), suffix...)
			reqs = append(reqs, Request{Prompt: tok.Decode(combined, false), PromptLen: len(combined), ExpectedOutputLen: f.PrefixRepetitionOutputLen})
		}
	}
	logMismatch(env.Logf, mismatch)
	if !env.DisableShuffle {
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
	Stream:          sampled(SamplePrefixRepetition),
}
