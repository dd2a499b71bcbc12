package datasets

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// alignConcurrency is how many /tokenize calls alignment keeps in flight.
const alignConcurrency = 64

// AlignWithServer is the server-tokenizer alignment `vllm bench serve` runs
// after sampling `random` and `prefix_repetition` prompts (spec §a): when
// the server counts the first prompt's tokens differently from PromptLen,
// every prompt the server finds longer than its PromptLen is replaced by
// the server's detokenization of its first PromptLen tokens. PromptLen is
// left as it is. Requests without a string prompt turn alignment off.
//
// Calls go to baseURL/tokenize and /detokenize with no extra headers;
// failures keep the original prompt. The two warning lines Python prints go
// to out.
func AlignWithServer(ctx context.Context, client *http.Client, baseURL, modelID string, reqs []Request, out io.Writer) {
	if client == nil {
		client = http.DefaultClient
	}
	if len(reqs) == 0 {
		return
	}
	for _, r := range reqs {
		if r.Prompt == "" && (r.PromptIDs != nil || r.PromptList != nil || r.ChatMessages != nil) {
			return
		}
	}
	first, err := postTokenize(ctx, client, baseURL, modelID, reqs[0].Prompt, false)
	if err != nil {
		fmt.Fprintln(out, "WARNING: /tokenize unavailable, skipping alignment.")
		return
	}
	if len(first) == reqs[0].PromptLen {
		return
	}
	fmt.Fprintf(out, "WARNING: tokenizer mismatch (server=%d, expected=%d), re-aligning prompts.\n", len(first), reqs[0].PromptLen)

	sem := make(chan struct{}, alignConcurrency)
	var wg sync.WaitGroup
	for i := range reqs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r := &reqs[i]
			ids, err := postTokenize(ctx, client, baseURL, modelID, r.Prompt, false)
			if err != nil || len(ids) <= r.PromptLen {
				return
			}
			if text, err := postDetokenize(ctx, client, baseURL, modelID, ids[:r.PromptLen]); err == nil {
				r.Prompt = text
			}
		})
	}
	wg.Wait()
}
