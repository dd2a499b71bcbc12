package multiturn

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"github.com/stampede-bench/stampede/datasets"
)

// SynthConfig configures synthetic conversations, in the shape of vLLM's
// generate_multi_turn.json:
//
//	{"filetype": "generate_conversations", "num_conversations": 24,
//	 "text_files": ["pg1184.txt"],
//	 "prompt_input": {"num_turns": D, "common_prefix_num_tokens": D (optional),
//	                  "prefix_num_tokens": D, "num_tokens": D},
//	 "prompt_output": {"num_tokens": D}}
//
// with each D a Distribution. num_turns counts messages (user and
// assistant), at least 2 and rounded up to even, as vLLM counts them.
type SynthConfig struct {
	NumConversations int
	// TextFiles are read for prompt text, relative to the config file's
	// directory unless absolute.
	TextFiles                                                             []string
	NumTurns, CommonPrefixTokens, PrefixTokens, InputTokens, OutputTokens *Distribution
	// dir is the config file's directory.
	dir string
}

type synthJSON struct {
	Filetype         *string         `json:"filetype"`
	NumConversations *int            `json:"num_conversations"`
	TextFiles        []string        `json:"text_files"`
	PrintStats       *bool           `json:"print_stats"`
	PromptInput      json.RawMessage `json:"prompt_input"`
	PromptOutput     json.RawMessage `json:"prompt_output"`
}

// ParseSynthConfig reads the synthetic-conversation config.
func ParseSynthConfig(data []byte) (*SynthConfig, error) {
	var j synthJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("synthetic conversation config: %v", err)
	}
	if j.Filetype == nil {
		return nil, fmt.Errorf("missing field \"filetype\" (want \"generate_conversations\")")
	}
	if *j.Filetype != "generate_conversations" {
		return nil, fmt.Errorf("filetype %q: want \"generate_conversations\"", *j.Filetype)
	}
	if j.NumConversations == nil || *j.NumConversations < 1 {
		return nil, fmt.Errorf("num_conversations: want a whole number, 1 or more")
	}
	if len(j.TextFiles) == 0 {
		return nil, fmt.Errorf("text_files: want a list of at least one text file to draw prompt text from")
	}
	c := &SynthConfig{NumConversations: *j.NumConversations, TextFiles: j.TextFiles}
	sections := []struct {
		raw      json.RawMessage
		name     string
		subs     []string
		optional map[string]bool
		into     []**Distribution
	}{
		{j.PromptInput, "prompt_input", []string{"num_turns", "common_prefix_num_tokens", "prefix_num_tokens", "num_tokens"},
			map[string]bool{"common_prefix_num_tokens": true},
			[]**Distribution{&c.NumTurns, &c.CommonPrefixTokens, &c.PrefixTokens, &c.InputTokens}},
		{j.PromptOutput, "prompt_output", []string{"num_tokens"}, nil, []**Distribution{&c.OutputTokens}},
	}
	for _, sec := range sections {
		if sec.raw == nil {
			return nil, fmt.Errorf("missing section %q", sec.name)
		}
		var subs map[string]json.RawMessage
		if err := json.Unmarshal(sec.raw, &subs); err != nil {
			return nil, fmt.Errorf("%s: want an object: %v", sec.name, err)
		}
		for i, sub := range sec.subs {
			raw, ok := subs[sub]
			if !ok {
				if sec.optional[sub] {
					*sec.into[i] = &Distribution{Kind: "constant"}
					continue
				}
				return nil, fmt.Errorf("%s: missing field %q (a distribution)", sec.name, sub)
			}
			d, err := parseDistribution(raw, sec.name+"."+sub)
			if err != nil {
				return nil, err
			}
			*sec.into[i] = d
		}
	}
	return c, nil
}

// instruction opens every synthetic question after its context.
const instruction = "Continue the text below in your own words, then summarise it: "

// Generate builds the synthetic conversations from the text files'
// tokens, seeded: the same seed, config and tokenizer give the same
// conversations. Each conversation's first user turn carries the common
// prefix (the same for all), then a prefix of its own (prefix_num_tokens
// of text no other conversation uses), then the question; every question
// is filled to its num_tokens draw with fresh text. User prompts open
// with the conversation's id, so that conversations share no prefix but
// the common one. The assistant messages are the dataset's answers, of
// prompt_output.num_tokens tokens: they set max_tokens, and they are the
// history when --history dataset. Text that runs out wraps around to the
// start of the files.
func (c *SynthConfig) Generate(tok datasets.Tokenizer, seed uint64) ([]Conversation, error) {
	var text []int32
	for _, f := range c.TextFiles {
		path := f
		if !filepath.IsAbs(path) && c.dir != "" {
			path = filepath.Join(c.dir, path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("text_files: %w", err)
		}
		text = tok.Encode(text, string(data), false)
	}
	if len(text) == 0 {
		return nil, fmt.Errorf("text_files %v: no text to draw prompts from", c.TextFiles)
	}
	count := func(s string) int { return len(tok.Encode(nil, s, false)) }
	// take returns n tokens of text from position at, wrapping around.
	take := func(at, n int) string {
		ids := make([]int32, 0, n)
		for len(ids) < n {
			at %= len(text)
			k := min(n-len(ids), len(text)-at)
			ids = append(ids, text[at:at+k]...)
			at += k
		}
		return tok.Decode(ids, true)
	}
	r := rand.New(rand.NewPCG(seed, 0x6d756c7469747572)) // "multitur"
	n := c.NumConversations
	turns := c.NumTurns.Ints(r, n)
	prefixes := c.PrefixTokens.Ints(r, n)
	common := max(0, c.CommonPrefixTokens.Ints(r, 1)[0])
	cursor := 0
	commonText := ""
	if common > 0 {
		commonText = take(cursor, common) + "\n"
		cursor += common
	}
	convs := make([]Conversation, n)
	for ci := range convs {
		msgs := max(2, turns[ci])
		msgs += msgs % 2
		in := c.InputTokens.Ints(r, msgs)
		out := c.OutputTokens.Ints(r, msgs)
		conv := Conversation{ID: fmt.Sprintf("conv-%d", ci), Messages: make([]Message, 0, msgs)}
		for t := range msgs {
			if t%2 == 1 {
				conv.Messages = append(conv.Messages, Message{Role: "assistant", Content: take(0, max(1, out[t]))})
				continue
			}
			content := fmt.Sprintf("[%s, turn %d] ", conv.ID, t/2+1)
			if t == 0 {
				content = commonText + content
				if p := prefixes[ci]; p > 0 {
					content += take(cursor, p) + "\n"
					cursor += p
				}
			}
			content += instruction
			if fill := in[t] - count(content); fill > 0 {
				content += take(cursor, fill)
				cursor += fill
			}
			conv.Messages = append(conv.Messages, Message{Role: "user", Content: content})
		}
		convs[ci] = conv
	}
	return slices.Clip(convs), nil
}
