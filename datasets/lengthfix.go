package datasets

import "github.com/stampede-bench/stampede/datasets/pyrand"

// maxLengthFixRetries is gen_prompt_decode_to_target_len's max_retry.
const maxLengthFixRetries = 10

// lengthFix is one run of Python's gen_prompt_decode_to_target_len, kept as
// a resumable state so the tokenizer work can run on many cores while the
// random draws stay in Python's order. The loop, per round:
//
//	prompt = decode(ids); ids = encode(prompt, add_special=False)
//	out of retries → stop (mismatch = len(ids) - target)
//	len(ids) == target → stop
//	len(ids) <  target → append target-len(ids) random ids in [0, vocab)
//	len(ids) >  target → truncate to target
//	retries -= 1
//
// advance runs rounds until the loop stops or needs random ids; the caller
// supplies them with extend, in request order, and advances again.
type lengthFix struct {
	ids       []int32
	target    int
	triesLeft int
	prompt    string
	done      bool
	mismatch  int
	need      int // random ids needed before the next round
	// count is len(ids) once done; with dropIDs the ids themselves are
	// let go then, for callers that keep only the prompt and its length.
	count   int
	dropIDs bool
}

func newLengthFix(ids []int32, target int) *lengthFix {
	return &lengthFix{ids: ids, target: target, triesLeft: maxLengthFixRetries}
}

func (f *lengthFix) advance(tok Tokenizer) {
	var rounds lengthRounds
	if rt, ok := tok.(rounder); ok {
		rounds = rt.NewRounds()
		defer rounds.Done()
	}
	truncated := false
	for !f.done && f.need == 0 {
		// The ids are decoded: their array takes the new ones.
		switch {
		case rounds != nil && truncated:
			f.ids = rounds.Truncated(f.ids)
		case rounds != nil:
			f.ids = rounds.Round(f.ids[:0], f.ids)
		default:
			f.prompt = tok.Decode(f.ids, false)
			f.ids = tok.Encode(f.ids[:0], f.prompt, false)
		}
		truncated = false
		n := len(f.ids)
		if rounds != nil && (f.triesLeft <= 0 || n <= f.target) {
			// The loop stops, or waits for padding: this text is the
			// prompt, unless a later round replaces it.
			f.prompt = string(rounds.Text())
		}
		switch {
		case f.triesLeft <= 0:
			f.mismatch = n - f.target
			f.stop()
		case n == f.target:
			f.stop()
		case n < f.target:
			f.need = f.target - n
		default:
			f.ids = f.ids[:f.target]
			f.triesLeft--
			truncated = true
		}
	}
}

func (f *lengthFix) stop() {
	f.done, f.count = true, len(f.ids)
	if f.dropIDs {
		f.ids = nil
	}
}

// extend appends the random ids advance asked for and uses up the round.
func (f *lengthFix) extend(extra []int32) {
	f.ids = append(f.ids, extra...)
	f.need = 0
	f.triesLeft--
}

// rounder is a tokenizer that runs the length fix's rounds itself,
// byte for byte as Decode and Encode would, without a string of every
// text and re-encoding only the end of a truncated one
// (tokenizer.Rounds).
type rounder interface{ NewRounds() lengthRounds }

// lengthRounds is tokenizer.LengthRounds (an identical interface literal).
type lengthRounds = interface {
	Round(dst, ids []int32) []int32
	Truncated(ids []int32) []int32
	Text() []byte
	Done()
}

// drawFunc returns n random token ids from the dataset's generator.
type drawFunc func(n int) ([]int32, error)

// vocabDraw is the random datasets' padding draw, rng.integers(0,
// vocab_size, size=n): ids anywhere in the vocabulary, special ones
// included.
func vocabDraw(rng *pyrand.Generator, vocab int) drawFunc {
	return func(n int) ([]int32, error) {
		vals, err := rng.Integers(0, int64(vocab), n)
		if err != nil {
			return nil, err
		}
		return toInt32(vals), nil
	}
}

// finish drives f to the end, drawing random ids as needed.
func (f *lengthFix) finish(tok Tokenizer, draw drawFunc) error {
	for f.advance(tok); !f.done; f.advance(tok) {
		extra, err := draw(f.need)
		if err != nil {
			return err
		}
		f.extend(extra)
	}
	return nil
}

// logMismatch logs Python's summary of how far the length fixes missed
// their targets in total (mismatch, summed over every fix); nothing when
// they all hit or logf is nil.
func logMismatch(logf func(string, ...any), mismatch int) {
	if mismatch == 0 || logf == nil {
		return
	}
	logf("Across all generated prompts, there were %d %s tokens than expected after decoding and re-encoding. "+
		"This is expected due to the imperfect nature of the sampling procedure.", abs(mismatch), moreOrFewer(mismatch))
}
