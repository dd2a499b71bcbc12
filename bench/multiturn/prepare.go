package multiturn

import (
	"fmt"

	"github.com/stampede-bench/stampede/datasets"
)

// NeedsTokenizer tells whether preparing in takes a tokenizer: synthetic
// conversations are cut from token counts, and --limit-max-tokens 0 sets
// each turn's max_tokens to its dataset answer's token count.
func NeedsTokenizer(opts *Options, in *Input) bool {
	return in.Synthetic != nil || opts.LimitMaxTokens == 0
}

// Prepare builds the plan before the clock starts: the conversations
// (generated, for a synthetic config), the turns each sends under
// --max-turns, and each turn's max_tokens.
func Prepare(opts *Options, in *Input, model string, tok datasets.Tokenizer) (*Plan, error) {
	convs := in.Conversations
	if in.Synthetic != nil {
		if tok == nil {
			return nil, fmt.Errorf("--input-file %s: synthetic conversations need a tokenizer (--tokenizer, or --model's)", opts.InputFile)
		}
		var err error
		if convs, err = in.Synthetic.Generate(tok, uint64(opts.Serve.Seed)); err != nil {
			return nil, fmt.Errorf("--input-file %s: %w", opts.InputFile, err)
		}
	}
	if len(convs) < opts.NumClients {
		return nil, fmt.Errorf("--num-clients %d: more clients than the %d conversations of --input-file; each client needs one", opts.NumClients, len(convs))
	}
	if opts.MaxActiveConversations > len(convs) {
		return nil, fmt.Errorf("--max-active-conversations %d: more than the %d conversations of --input-file", opts.MaxActiveConversations, len(convs))
	}
	p := &Plan{Conversations: convs, Model: model, IgnoreEOS: opts.IgnoreEOS,
		Turns: make([]int, len(convs)), MaxTokens: make([][]int, len(convs))}
	for i := range convs {
		c := &convs[i]
		n := c.Turns()
		if opts.MaxTurns > 0 {
			// --max-turns counts messages, user and assistant, as vLLM's
			// tool does: M messages hold ⌈M/2⌉ questions.
			n = min(n, (opts.MaxTurns+1)/2)
		}
		p.Turns[i] = n
		p.MaxTokens[i] = make([]int, n)
		for k := range n {
			p.MaxTokens[i][k] = -1
			switch _, answer, ok := c.turnAt(k); {
			case opts.LimitMaxTokens > 0:
				p.MaxTokens[i][k] = opts.LimitMaxTokens
			case opts.LimitMaxTokens == 0 && ok:
				if tok == nil {
					return nil, fmt.Errorf("--limit-max-tokens 0 takes each answer's token count from the dataset and needs a tokenizer")
				}
				p.MaxTokens[i][k] = max(1, len(tok.Encode(nil, answer, false)))
			}
		}
	}
	return p, nil
}
