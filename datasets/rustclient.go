package datasets

import (
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/stampede-bench/stampede/internal/py"
)

// FitModelLen is the Rust client's --max-model-len: the requests whose
// prompt and expected output together exceed maxLen tokens are dropped
// (the server would refuse them), the rest keep their order. It says on
// stderr how many went; none left is an error.
func FitModelLen(reqs []Request, maxLen int, stderr io.Writer) ([]Request, error) {
	fit := &ModelLenFit{MaxLen: maxLen}
	kept := fit.Keep(reqs)
	if err := fit.Finish(stderr); err != nil {
		return nil, err
	}
	return kept, nil
}

// ModelLenFit is FitModelLen over requests that come a batch at a time:
// Keep each batch, then Finish.
type ModelLenFit struct {
	MaxLen        int
	seen, dropped int
}

// Keep returns the requests of batch that fit, in batch's own memory.
func (f *ModelLenFit) Keep(batch []Request) []Request {
	kept := batch[:0]
	for _, r := range batch {
		if r.PromptLen+r.ExpectedOutputLen <= f.MaxLen {
			kept = append(kept, r)
		}
	}
	f.seen += len(batch)
	f.dropped += len(batch) - len(kept)
	return kept
}

// Finish says how many requests were dropped, and fails when all were.
func (f *ModelLenFit) Finish(stderr io.Writer) error {
	if f.dropped > 0 {
		fmt.Fprintf(stderr, "--max-model-len %d: dropped %d of %d requests whose prompt and output tokens exceed it\n",
			f.MaxLen, f.dropped, f.seen)
	}
	if f.dropped == f.seen {
		return &py.Error{Type: "ValueError", Msg: fmt.Sprintf("--max-model-len %d: every request's prompt and output tokens exceed it", f.MaxLen)}
	}
	return nil
}

// PromptTokenIDs is the Rust client's --prompt-token-ids: each text
// prompt becomes the token ids the server would make of it (its special
// tokens included), sent as the completions API's list of ids, so the
// server tokenizes nothing and sees exactly the tokens counted. The
// prompts are encoded on two goroutines per core; each request keeps its
// own ids.
func PromptTokenIDs(reqs []Request, tok Tokenizer) {
	workers := max(1, 2*runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(reqs); i += workers {
				r := &reqs[i]
				if r.Prompt == "" {
					continue
				}
				r.PromptIDs = tok.Encode(make([]int32, 0, r.PromptLen+tok.NumSpecialTokensToAdd()), r.Prompt, true)
				r.Prompt = ""
			}
		}()
	}
	wg.Wait()
}
