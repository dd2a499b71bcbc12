package datasets

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// ChatTemplate renders a single user turn the way Hugging Face's
// apply_chat_template([{"role": "user", "content": prompt}],
// add_generation_prompt=True, tokenize=False, **kwargs) does: the
// tokenizer's own template, rendered by datasets/chattemplate. It is nil
// when the tokenizer ships no template.
type ChatTemplate func(prompt string, kwargs map[string]any) (string, error)

// CustomOptions are the `custom` dataset's inputs.
type CustomOptions struct {
	Path       string // --dataset-path, a .jsonl file with a "prompt" field per line
	NumPrompts int    // --num-prompts; <= 0 takes every row
	// OutputLen is --custom-output-len; -1 takes each row's
	// "output_tokens".
	OutputLen int
	// SkipChatTemplate is --skip-chat-template. Without it the prompt goes
	// through ChatTemplate; when ChatTemplate is nil SampleCustom fails
	// and names the flag, rather than send prompts the Python tool would
	// have templated.
	SkipChatTemplate   bool
	ChatTemplate       ChatTemplate
	ChatTemplateKwargs map[string]any // --chat-template-kwargs
	Seed               int64          // --seed
	DisableShuffle     bool           // --disable-shuffle
	NoOversample       bool           // --no-oversample
	RequestIDPrefix    string
	Globals            PythonGlobals
}

// customRow is one JSONL line with the line number it came from.
type customRow struct {
	line   int
	fields map[string]json.RawMessage
}

// SampleCustom is CustomDataset: read the JSONL rows, reseed Python's
// random with Seed and shuffle them (unless DisableShuffle), then turn the
// first NumPrompts rows into requests. With a tokenizer, the output length
// is OutputLen or the row's output_tokens, the prompt is chat-templated
// unless SkipChatTemplate, and PromptLen is its token count with special
// tokens; without one (tok == nil) both lengths are 1. Ids are the row
// positions after shuffling.
func SampleCustom(tok Tokenizer, o CustomOptions) ([]Request, error) {
	if o.Path == "" {
		return nil, valueError("dataset_path must be provided for loading data.")
	}
	if !strings.HasSuffix(o.Path, ".jsonl") {
		return nil, &PythonError{Type: "NotImplementedError", Msg: "Only JSONL format is supported for CustomDataset."}
	}
	if tok != nil && !o.SkipChatTemplate && o.ChatTemplate == nil {
		return nil, fmt.Errorf("dataset custom: no chat template is available to render prompts (the tokenizer has no chat_template in tokenizer_config.json or chat_template.jinja beside it); pass --skip-chat-template to send the prompts as they are")
	}
	rows, columns, err := readJSONL(o.Path)
	if err != nil {
		return nil, fmt.Errorf("dataset custom: %w", err)
	}
	if !columns["prompt"] {
		return nil, valueError(fmt.Sprintf("JSONL file must contain a 'prompt' column. (No line of %s has a \"prompt\" "+
			"field; each line must be an object such as {\"prompt\": \"...\"}.)", o.Path))
	}
	random := shuffleRows(o.Globals, o.Seed, o.DisableShuffle, rows)
	n := sampleTarget(o.NumPrompts, len(rows))
	var reqs []Request
	for i, row := range rows {
		if len(reqs) >= n {
			break
		}
		var prompt string
		if err := json.Unmarshal(row.fields["prompt"], &prompt); err != nil {
			return nil, fmt.Errorf("dataset custom %s line %d: \"prompt\" must be a string, got %s", o.Path, row.line, orNaN(row.fields["prompt"]))
		}
		r := Request{ExpectedOutputLen: 1, PromptLen: 1, RequestID: o.RequestIDPrefix + strconv.Itoa(i)}
		if tok != nil {
			if o.OutputLen == -1 {
				if !columns["output_tokens"] {
					return nil, valueError(fmt.Sprintf("If no output length is provided the custom dataset must contain an 'output_tokens' field. "+
						"(No line of %s has one; add \"output_tokens\": N to each line, or pass --custom-output-len N.)", o.Path))
				}
				if r.ExpectedOutputLen, err = pyIntField(row.fields["output_tokens"]); err != nil {
					return nil, withPlace(err, o.Path, row.line)
				}
			} else {
				r.ExpectedOutputLen = o.OutputLen
			}
			if !o.SkipChatTemplate {
				if prompt, err = o.ChatTemplate(prompt, o.ChatTemplateKwargs); err != nil {
					return nil, fmt.Errorf("dataset custom %s line %d: chat template: %w", o.Path, row.line, err)
				}
			}
			r.PromptLen = len(tok.Encode(nil, prompt, true))
		}
		r.Prompt = prompt
		reqs = append(reqs, r)
	}
	return maybeOversample(reqs, n, o.RequestIDPrefix, o.NoOversample, o.Seed, random)
}

// readJSONL reads one JSON object per non-blank line and reports which
// keys appear in any row (pandas' columns).
func readJSONL(path string) ([]customRow, map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var rows []customRow
	columns := map[string]bool{}
	lines := newJSONLines(f)
	for lines.next() {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(lines.text, &fields); err != nil {
			return nil, nil, fmt.Errorf("%s line %d: %s", path, lines.line,
				JSONProblem(lines.text, err, `one JSON object per line, such as {"prompt": "..."}`))
		}
		for k := range fields {
			columns[k] = true
		}
		rows = append(rows, customRow{lines.line, fields})
	}
	if err := lines.err(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return rows, columns, nil
}

// pyIntField is int(row["output_tokens"]) after pandas: numbers truncate
// toward zero, numeric strings parse, and a missing or null cell is NaN.
func pyIntField(raw json.RawMessage) (int, error) {
	bad := func() error {
		return valueError(fmt.Sprintf("Invalid value for 'output_tokens' in custom dataset: '%s'. Must be an integer.", orNaN(raw)))
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err == nil && raw != nil {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, bad()
		}
		return int(f), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
			return v, nil
		}
	}
	return 0, bad()
}

// orNaN shows a cell as Python would print it after pandas: a missing or
// null cell is nan, a string is its text.
func orNaN(raw json.RawMessage) string {
	if raw == nil || string(raw) == "null" {
		return "nan"
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// CustomFlags are the custom* datasets' options.
type CustomFlags struct {
	CustomOutputLen            int  `long:"custom-output-len" default:"256" copy-of:"output-len" description:"Output tokens per request; -1 takes each row's output_tokens."`
	CustomEnsureClientSideData bool `long:"custom-ensure-client-side-data" description:"custom_image: inline images as base64 data URLs (not supported yet)."`
}

var customDataset = &Dataset{
	Name: "custom",
	Sample: func(env *Env) ([]Request, error) {
		return SampleCustom(env.Tokenizer, CustomOptions{
			Path: env.Path, NumPrompts: env.NumPrompts, OutputLen: env.Flags.CustomOutputLen,
			SkipChatTemplate: env.SkipChatTemplate, ChatTemplate: env.ChatTemplate, ChatTemplateKwargs: env.ChatTemplateKwargs,
			Seed: env.Seed, DisableShuffle: env.DisableShuffle, NoOversample: env.NoOversample,
			RequestIDPrefix: env.RequestIDPrefix, Globals: env.Globals,
		})
	},
}
