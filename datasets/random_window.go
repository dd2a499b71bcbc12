package datasets

import (
	"cmp"
	"fmt"
	"slices"
)

// The random datasets build their prompts a window at a time: a run of
// 100,000 prompts of 8,192 tokens is 4 GB of text, and a window is a few
// tens of MB. In a window the tokenizer rounds run first on every worker
// (advance), in the order of the prompts' starts on the cycle of allowed
// ids, so that neighbouring prompts, which share nearly all their words,
// find them merged already in the tokenizer's caches; then the prompts
// are finished one by one in request order, so the random padding is
// drawn exactly as Python's sequential loop draws it. While one window
// is finished, the next one's rounds run on the other cores.

// windowTokens is about how many prompt tokens a window holds: ~20 MB of
// ids and text.
const windowTokens = 2 << 20

// Bounds of a window's prompt count.
const (
	minPromptWindow = 64
	maxPromptWindow = 1 << 16
)

// promptWindow is the window size for prompts of meanLen tokens, a
// multiple of unit (the prompts one request groups).
func promptWindow(meanLen, unit int) int {
	w := min(max(windowTokens/max(meanLen, 1), minPromptWindow), maxPromptWindow)
	unit = max(unit, 1)
	return max(unit, w/unit*unit)
}

// tokenWindows is a run of generate_token_sequence inputs: prompt i is the
// prefix, then inputLens[i] allowed ids from (offsets[i] + index0 + i) on,
// fixed to prefixLen + inputLens[i] tokens.
type tokenWindows struct {
	tok       Tokenizer
	prefix    []int32
	prefixLen int
	allowed   []int32
	inputLens []int64
	offsets   []int64
	index0    int
	draw      drawFunc
	workers   int
	// window is how many prompts a window holds; 0 sizes it by their
	// mean length (promptWindow).
	window int
}

// build finishes every prompt in request order, calling after(i, f) with
// each one as soon as it is finished (random-mm draws its media there),
// and flush(lo, fixes) with each window of them, prompts lo, lo+1, ...;
// the fixes hold the prompt and its length, not the ids. A failed padding
// draw comes back as an error of dataset name, the callbacks' errors as
// they are.
func (g *tokenWindows) build(name string, after func(i int, f *lengthFix) error, flush func(lo int, fixes []*lengthFix) error) error {
	n := len(g.inputLens)
	if n == 0 {
		return nil
	}
	size := g.window
	if size <= 0 {
		total := int64(0)
		for _, l := range g.inputLens {
			total += l
		}
		size = promptWindow(int(total/int64(n))+len(g.prefix), 1)
	}
	// One window is advanced ahead of the one being finished.
	advanced := make(chan []*lengthFix)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(advanced)
		for lo := 0; lo < n; lo += size {
			fixes := g.advance(lo, min(lo+size, n))
			select {
			case advanced <- fixes:
			case <-stop:
				return
			}
		}
	}()
	lo := 0
	for fixes := range advanced {
		for j, f := range fixes {
			if err := f.finish(g.tok, g.draw); err != nil {
				return fmt.Errorf("dataset %s: %w", name, err)
			}
			if after != nil {
				if err := after(lo+j, f); err != nil {
					return err
				}
			}
		}
		if err := flush(lo, fixes); err != nil {
			return err
		}
		lo += len(fixes)
	}
	return nil
}

// advance runs the tokenizer rounds of prompts [lo, hi) on the workers,
// in the order of their starts, each up to its first padding draw. Each
// worker builds a prompt's ids just before its rounds.
func (g *tokenWindows) advance(lo, hi int) []*lengthFix {
	byStart := make([]int, hi-lo)
	for k := range byStart {
		byStart[k] = lo + k
	}
	start := func(i int) int64 { return (g.offsets[i] + int64(g.index0+i)) % int64(len(g.allowed)) }
	slices.SortStableFunc(byStart, func(a, b int) int { return cmp.Compare(start(a), start(b)) })
	fixes := make([]*lengthFix, hi-lo)
	parallelEach(len(byStart), g.workers, func(k int) {
		i := byStart[k]
		f := tokenSequence(g.prefix, g.prefixLen, g.allowed, int(g.inputLens[i]), g.offsets[i], g.index0+i)
		f.dropIDs = true
		f.advance(g.tok)
		fixes[i-lo] = f
	})
	return fixes
}
