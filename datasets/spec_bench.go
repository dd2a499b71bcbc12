package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// SpecBenchOptions are the `spec_bench` dataset's inputs
// (https://github.com/hemingkx/Spec-Bench, question.jsonl).
type SpecBenchOptions struct {
	Path       string // --dataset-path: JSON lines with "turns" (and "category")
	NumPrompts int    // --num-prompts; <= 0 takes every row
	// OutputLen is --spec-bench-output-len (default 256); -1 asks for a
	// per-row output_tokens, which spec_bench rows do not have (an error,
	// as in Python).
	OutputLen int
	// Category is --spec-bench-category; "" keeps every row.
	Category string
	// ChatTemplate renders each prompt; vLLM always applies the model's
	// chat template to spec_bench (--skip-chat-template does not reach
	// this dataset), so it is required.
	ChatTemplate    ChatTemplate
	DisableShuffle  bool // --disable-shuffle
	NoOversample    bool // --no-oversample
	RequestIDPrefix string
	// Globals is the run's Python-global RNG pair; vLLM builds this dataset
	// without passing --seed, so it reseeds random with 0 before shuffling
	// and oversampling.
	Globals PythonGlobals
}

// SampleSpecBench is SpecBench: keep the rows of Category (all when ""),
// take turns[0] of each as the prompt, reseed Python's random with 0 and
// shuffle (unless DisableShuffle), then sample as the custom dataset does
// with the chat template always applied and no template kwargs: PromptLen
// is the templated prompt's token count with special tokens, ids are the
// positions after shuffling, and too few rows are oversampled.
func SampleSpecBench(tok Tokenizer, o SpecBenchOptions) ([]Request, error) {
	if tok == nil {
		return nil, fmt.Errorf("dataset spec_bench: a tokenizer is required (drop --skip-tokenizer-init)")
	}
	if o.ChatTemplate == nil {
		return nil, fmt.Errorf("dataset spec_bench: no chat template is available to render prompts (the tokenizer has no chat_template in tokenizer_config.json or chat_template.jinja beside it), and vLLM applies it to every spec_bench prompt; --skip-chat-template does not apply to spec_bench")
	}
	if o.Path == "" {
		return nil, valueError("dataset_path must be provided for loading data.")
	}
	prompts, err := firstTurnPrompts(o.Path, "turns", o.Category, func(raw json.RawMessage) (string, bool) {
		var turns []json.RawMessage
		var first string
		if json.Unmarshal(raw, &turns) != nil || len(turns) == 0 || json.Unmarshal(turns[0], &first) != nil {
			return "", false
		}
		return first, true
	}, "JSONL file must contain a 'turns' column.")
	if err != nil {
		return nil, datasetError("spec_bench", err)
	}
	return sampleCustomPrompts(tok, prompts, customPromptOptions{
		dataset:         "spec_bench",
		numPrompts:      o.NumPrompts,
		outputLen:       o.OutputLen,
		chatTemplate:    o.ChatTemplate,
		disableShuffle:  o.DisableShuffle,
		noOversample:    o.NoOversample,
		requestIDPrefix: o.RequestIDPrefix,
		globals:         o.Globals,
	})
}

// firstTurnPrompts reads a JSONL file as pandas.read_json(lines=True) and
// keeps, for each row of the category (every row when category is ""),
// the prompt extract takes from its column. A file without that column is
// missingColumn (a ValueError); filtering on a category needs a
// "category" column (Python's KeyError otherwise).
func firstTurnPrompts(path, column, category string, extract func(json.RawMessage) (string, bool), missingColumn string) ([]string, error) {
	rows, columns, err := readJSONL(path)
	if err != nil {
		return nil, err
	}
	if !columns[column] {
		return nil, valueError(missingColumn)
	}
	if category != "" && !columns["category"] {
		return nil, &PythonError{Type: "KeyError", Msg: "'category'"}
	}
	var prompts []string
	for _, row := range rows {
		if category != "" {
			var c string
			if json.Unmarshal(row.fields["category"], &c) != nil || c != category {
				continue
			}
		}
		p, ok := extract(row.fields[column])
		if !ok {
			return nil, fmt.Errorf("%s line %d: cannot take the prompt from %q: %s", path, row.line, column, orNaN(row.fields[column]))
		}
		prompts = append(prompts, p)
	}
	return prompts, nil
}

// customPromptOptions drive sampleCustomPrompts.
type customPromptOptions struct {
	dataset            string // for error text
	numPrompts         int
	outputLen          int
	skipChatTemplate   bool
	chatTemplate       ChatTemplate
	chatTemplateKwargs map[string]any
	disableShuffle     bool
	noOversample       bool
	requestIDPrefix    string
	globals            PythonGlobals
}

// sampleCustomPrompts is what SpecBench and SpeedBench inherit from
// CustomDataset, for rows that hold only a prompt: random.seed(0) and
// shuffle (load_data), then CustomDataset.sample with a tokenizer.
// Both classes are built without random_seed, so their seed is 0.
func sampleCustomPrompts(tok Tokenizer, prompts []string, o customPromptOptions) ([]Request, error) {
	random := shuffleRows(o.globals, 0, o.disableShuffle, prompts)
	n := sampleTarget(o.numPrompts, len(prompts))
	var reqs []Request
	for i, prompt := range prompts {
		if len(reqs) >= n {
			break
		}
		if o.outputLen == -1 {
			return nil, valueError("If no output length is provided the custom dataset must contain an 'output_tokens' field.")
		}
		if !o.skipChatTemplate {
			var err error
			if prompt, err = o.chatTemplate(prompt, o.chatTemplateKwargs); err != nil {
				return nil, fmt.Errorf("dataset %s: chat template: %w", o.dataset, err)
			}
		}
		reqs = append(reqs, Request{
			Prompt:            prompt,
			PromptLen:         len(tok.Encode(nil, prompt, true)),
			ExpectedOutputLen: o.outputLen,
			RequestID:         o.requestIDPrefix + strconv.Itoa(i),
		})
	}
	return maybeOversample(reqs, n, o.requestIDPrefix, o.noOversample, 0, random)
}

// datasetError names the dataset in err, except for a *PythonError, whose
// text must stay Python's word for word.
func datasetError(dataset string, err error) error {
	var pyErr *PythonError
	if errors.As(err, &pyErr) {
		return err
	}
	return fmt.Errorf("dataset %s: %w", dataset, err)
}

// SpecBenchFlags are the spec_bench dataset's options.
type SpecBenchFlags struct {
	SpecBenchOutputLen int    `long:"spec-bench-output-len" default:"256" copy-of:"output-len" description:"Output tokens per request."`
	SpecBenchCategory  string `long:"spec-bench-category" description:"Only prompts of this category."`
}

var specBenchDataset = &Dataset{
	Name: "spec_bench",
	Sample: func(env *Env) ([]Request, error) {
		return SampleSpecBench(env.Tokenizer, SpecBenchOptions{
			Path: env.Path, NumPrompts: env.NumPrompts, OutputLen: env.Flags.SpecBenchOutputLen,
			Category: env.Flags.SpecBenchCategory, ChatTemplate: env.ChatTemplate,
			DisableShuffle: env.DisableShuffle, NoOversample: env.NoOversample,
			RequestIDPrefix: env.RequestIDPrefix, Globals: env.Globals,
		})
	},
}
