package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/stampede-bench/stampede/internal/py"
)

// SampleSpecBench is SpecBench: keep the rows of --spec-bench-category
// (all when ""), take turns[0] of each as the prompt, reseed Python's
// random with 0 and shuffle (unless --disable-shuffle), then sample as the
// custom dataset does with --spec-bench-output-len, the chat template
// always applied (vLLM does not pass --skip-chat-template to this dataset)
// and no template kwargs: PromptLen
// is the templated prompt's token count with special tokens, ids are the
// positions after shuffling, and too few rows are oversampled.
func SampleSpecBench(env *Env) ([]Request, error) {
	f := &env.Flags.SpecBenchFlags
	if env.Tokenizer == nil {
		return nil, fmt.Errorf("dataset spec_bench: a tokenizer is required (drop --skip-tokenizer-init)")
	}
	if env.ChatTemplate == nil {
		return nil, fmt.Errorf("dataset spec_bench: no chat template is available to render prompts (the tokenizer has no chat_template in tokenizer_config.json or chat_template.jinja beside it), and vLLM applies it to every spec_bench prompt; --skip-chat-template does not apply to spec_bench")
	}
	if env.Path == "" {
		return nil, valueError("dataset_path must be provided for loading data.")
	}
	prompts, err := firstTurnPrompts(env.Path, "turns", f.SpecBenchCategory, func(raw json.RawMessage) (string, bool) {
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
	return sampleCustomPrompts(env, "spec_bench", prompts, f.SpecBenchOutputLen, true, nil)
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
		return nil, &py.Error{Type: "KeyError", Msg: "'category'"}
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

// sampleCustomPrompts is what SpecBench and SpeedBench inherit from
// CustomDataset, for rows that hold only a prompt: random.seed(0) and
// shuffle (load_data), then CustomDataset.sample with a tokenizer: each
// prompt asks for outputLen tokens and, when template is set, goes through
// env.ChatTemplate with kwargs. Both classes are built without
// random_seed, so their seed is 0 whatever --seed is. dataset names the
// dataset in errors.
func sampleCustomPrompts(env *Env, dataset string, prompts []string, outputLen int, template bool, kwargs map[string]any) ([]Request, error) {
	tok := env.Tokenizer
	random := shuffleRows(env.Globals, 0, env.DisableShuffle, prompts)
	n := sampleTarget(env.NumPrompts, len(prompts))
	var reqs []Request
	for i, prompt := range prompts {
		if len(reqs) >= n {
			break
		}
		if outputLen == -1 {
			return nil, valueError("If no output length is provided the custom dataset must contain an 'output_tokens' field.")
		}
		if template {
			var err error
			if prompt, err = env.ChatTemplate(prompt, kwargs); err != nil {
				return nil, fmt.Errorf("dataset %s: chat template: %w", dataset, err)
			}
		}
		reqs = append(reqs, Request{
			Prompt:            prompt,
			PromptLen:         len(tok.Encode(nil, prompt, true)),
			ExpectedOutputLen: outputLen,
			RequestID:         env.RequestIDPrefix + strconv.Itoa(i),
		})
	}
	return maybeOversample(reqs, n, env.RequestIDPrefix, env.NoOversample, 0, random)
}

// datasetError names the dataset in err, except for a *py.Error, whose
// text must stay Python's word for word.
func datasetError(dataset string, err error) error {
	var pyErr *py.Error
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
	Name:   "spec_bench",
	Stream: sampled(SampleSpecBench),
}
