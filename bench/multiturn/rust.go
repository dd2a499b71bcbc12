package multiturn

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/datasets"
)

// The Rust client's multi-turn mode (vllm-bench --multi-turn): a serve
// command line whose --num-prompts counts conversations. Each
// conversation is driven turn by turn through this package's engine, one
// turn in flight per conversation and --multi-turn-concurrency
// conversations at once, each turn carrying the history so far and an
// X-Session-ID header of its conversation's id. --dataset-name random
// makes the user turns from random tokens of the tokenizer's vocabulary
// (--random-input-len for the first, --per-turn-input-len for the rest)
// and asks for --random-output-len tokens with min_tokens set to the same,
// so answers keep their length without ignore_eos; --dataset-name
// sharegpt takes the conversations of --dataset-path with two turns or
// more, and their own answers' lengths.

// RustCommand runs a serve plan with --multi-turn.
func RustCommand(ctx context.Context, cfg *plan.Plan, stdout, stderr io.Writer) error {
	opts := RustOptions(cfg)
	if cfg.DatasetName == "sharegpt" {
		in, err := rustShareGPT(cfg)
		if err != nil {
			return err
		}
		opts.NumClients = min(opts.NumClients, len(in.Conversations))
		opts.MaxActiveConversations = opts.NumClients
		return drive(ctx, opts, NeedsTokenizer(opts, in), func(datasets.Tokenizer) (*Input, error) { return in, nil }, stdout, stderr)
	}
	opts.NumClients = min(opts.NumClients, cfg.NumPrompts)
	opts.MaxActiveConversations = opts.NumClients
	return drive(ctx, opts, true, func(tok datasets.Tokenizer) (*Input, error) {
		if tok == nil {
			return nil, fmt.Errorf("--multi-turn with --dataset-name random makes its turns from the tokenizer's vocabulary: drop --skip-tokenizer-init")
		}
		convs, err := RustConversations(cfg, tok)
		return &Input{Conversations: convs}, err
	}, stdout, stderr)
}

// RustOptions are the engine's options for the Rust client's multi-turn
// flags: a client per concurrent conversation, each with one conversation
// open; the think time --multi-turn-delay-ms; no early stop (a client
// takes the next conversation until none is left); the history the
// server's answers, or none with prefix sharing.
func RustOptions(cfg *plan.Plan) *Options {
	conc := cfg.NumPrompts
	switch {
	case cfg.MultiTurnConcurrency != nil:
		conc = *cfg.MultiTurnConcurrency
	case cfg.MaxConcurrency != nil:
		conc = *cfg.MaxConcurrency
	}
	o := &Options{
		InputFile: "--dataset-name " + cfg.DatasetName, NumClients: max(1, conc), MaxActiveConversations: max(1, conc),
		Sampling: "round_robin", SessionHeader: "X-Session-ID", History: "server", NoEarlyStop: true,
		IgnoreEOS: cfg.Given("ignore-eos") && cfg.IgnoreEOS, Serve: cfg,
		NoHistory: rustPrefixSharing(cfg),
	}
	if cfg.DatasetName == "sharegpt" {
		o.InputFile = cfg.DatasetPath
		if cfg.MultiTurnMaxTurns > 0 {
			o.MaxTurns = 2 * cfg.MultiTurnMaxTurns
		}
	} else {
		o.LimitMaxTokens, o.LimitMinTokens = cfg.RandomOutputLen, cfg.RandomOutputLen
	}
	if cfg.MultiTurnDelayMs > 0 {
		o.ThinkTime = &Distribution{Kind: "constant", Value: float64(cfg.MultiTurnDelayMs) / 1e3}
	}
	return o
}

// rustPrefixSharing reports whether turns share prefixes: then each turn
// is one message of a fixed length and no history is sent.
func rustPrefixSharing(cfg *plan.Plan) bool {
	return cfg.MultiTurnPrefixGlobalRatio > 0 || cfg.MultiTurnPrefixConversationRatio > 0
}

// RustTurns is how many turns each of n conversations has: uniform over
// [--multi-turn-min-turns, --multi-turn-max-turns], either one 0 standing
// for --multi-turn-num-turns.
func RustTurns(cfg *plan.Plan, r *rand.Rand, n int) []int {
	lo, hi := cfg.MultiTurnMinTurns, cfg.MultiTurnMaxTurns
	if lo == 0 {
		lo = cfg.MultiTurnNumTurns
	}
	if hi == 0 {
		hi = cfg.MultiTurnNumTurns
	}
	lo, hi = min(lo, hi), max(lo, hi)
	out := make([]int, n)
	for i := range out {
		out[i] = lo + r.IntN(hi-lo+1)
	}
	return out
}

// RustConversations makes --num-prompts synthetic conversations, seeded
// by --seed: each user turn is --random-input-len tokens (the first) or
// --per-turn-input-len tokens (the rest, when given), drawn uniformly from
// the tokenizer's vocabulary without its special tokens and decoded to
// text. With prefix sharing a turn of L tokens opens with the first
// ⌊global·L⌋ tokens of one sequence shared by every conversation, then
// the first ⌊conversation·L⌋ of one sequence of its own conversation,
// then fresh tokens.
func RustConversations(cfg *plan.Plan, tok datasets.Tokenizer) ([]Conversation, error) {
	vocab := tok.VocabSize()
	if vocab < 1 {
		return nil, fmt.Errorf("--multi-turn: the tokenizer has no vocabulary to draw turns from")
	}
	special := tok.AllSpecialIDs()
	r := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x7275737474726e73)) // "rustturns"
	draw := func(dst []int32, n int) []int32 {
		for len(dst) < cap(dst) && n > 0 {
			id := int32(r.IntN(vocab))
			if _, isSpecial := slices.BinarySearch(special, id); isSpecial {
				continue
			}
			dst = append(dst, id)
			n--
		}
		return dst
	}
	first, later := cfg.RandomInputLen, cfg.RandomInputLen
	if cfg.PerTurnInputLen > 0 {
		later = cfg.PerTurnInputLen
	}
	longest := max(first, later)
	global := draw(make([]int32, 0, longest), longest)
	turns := RustTurns(cfg, r, cfg.NumPrompts)
	convs := make([]Conversation, cfg.NumPrompts)
	for ci := range convs {
		own := draw(make([]int32, 0, longest), longest)
		c := Conversation{ID: fmt.Sprintf("conv-%d", ci), Messages: make([]Message, 0, turns[ci])}
		for k := range turns[ci] {
			n := later
			if k == 0 {
				n = first
			}
			g := int(cfg.MultiTurnPrefixGlobalRatio * float64(n))
			p := int(cfg.MultiTurnPrefixConversationRatio * float64(n))
			ids := make([]int32, 0, n)
			ids = append(ids, global[:g]...)
			ids = append(ids, own[:p]...)
			ids = draw(ids, n-g-p)
			c.Messages = append(c.Messages, Message{Role: "user", Content: toLength(tok, ids, n, draw)})
		}
		convs[ci] = c
	}
	return convs, nil
}

// maxLengthRounds bounds toLength's decode and encode rounds, as vLLM's
// gen_prompt_decode_to_target_len bounds its retries.
const maxLengthRounds = 10

// toLength is the text of ids that encodes to n tokens: random ids decode
// to text whose pieces merge or split when encoded again, so the text is
// encoded, cut to n or topped up with fresh ids, and decoded again until
// it holds (or the rounds run out, leaving it within a few tokens).
func toLength(tok datasets.Tokenizer, ids []int32, n int, draw func([]int32, int) []int32) string {
	text := tok.Decode(ids, true)
	for range maxLengthRounds {
		ids = tok.Encode(ids[:0], text, false)
		switch {
		case len(ids) == n:
			return text
		case len(ids) > n:
			ids = ids[:n]
		default:
			ids = draw(slices.Grow(ids, n-len(ids)), n-len(ids))
		}
		text = tok.Decode(ids, true)
	}
	return text
}

// rustShareGPT reads --dataset-path's ShareGPT conversations, keeps those
// with two turns or more (a question and its answer at least), and takes
// the first --num-prompts.
func rustShareGPT(cfg *plan.Plan) (*Input, error) {
	if cfg.DatasetPath == "" {
		return nil, fmt.Errorf("--multi-turn with --dataset-name sharegpt reads its conversations from --dataset-path: give the ShareGPT JSON file")
	}
	in, err := ReadInput(cfg.DatasetPath)
	if err != nil {
		return nil, err
	}
	if in.Synthetic != nil {
		return nil, fmt.Errorf("--dataset-path %s: want ShareGPT's JSON list of conversations", cfg.DatasetPath)
	}
	var kept []Conversation
	for _, c := range in.Conversations {
		if len(kept) == cfg.NumPrompts {
			break
		}
		if _, _, answered := c.turnAt(0); answered {
			kept = append(kept, c)
		}
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("--dataset-path %s: no conversation has two turns or more", cfg.DatasetPath)
	}
	return &Input{Conversations: kept}, nil
}
