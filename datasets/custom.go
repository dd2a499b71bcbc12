package datasets

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/internal/py"
)

// ChatTemplate renders a single user turn the way Hugging Face's
// apply_chat_template([{"role": "user", "content": prompt}],
// add_generation_prompt=True, tokenize=False, **kwargs) does: the
// tokenizer's own template, rendered by datasets/chattemplate. It is nil
// when the tokenizer ships no template.
type ChatTemplate func(prompt string, kwargs map[string]any) (string, error)

// customRow is one JSONL line with the line number it came from.
type customRow struct {
	line   int
	fields map[string]json.RawMessage
}

// SampleCustom is CustomDataset: read the JSONL rows, reseed Python's
// random with --seed and shuffle them (unless --disable-shuffle), then turn
// the first --num-prompts rows (all when <= 0) into requests. With a
// tokenizer, the output length is --custom-output-len or, when that is -1,
// the row's output_tokens; the prompt is chat-templated with
// --chat-template-kwargs unless --skip-chat-template (without a template
// SampleCustom fails and names that flag rather than send prompts Python
// would have templated); and PromptLen is its token count with special
// tokens. Without one (--skip-tokenizer-init) both lengths are 1. Ids are
// the row positions after shuffling.
func SampleCustom(env *Env) ([]Request, error) {
	tok := env.Tokenizer
	if env.Path == "" {
		return nil, valueError("dataset_path must be provided for loading data.")
	}
	if !strings.HasSuffix(env.Path, ".jsonl") {
		return nil, &py.Error{Type: "NotImplementedError", Msg: "Only JSONL format is supported for CustomDataset."}
	}
	// The file first, as Python loads it before templating: a missing
	// file is the first thing to fix.
	rows, columns, err := readJSONL(env.Path)
	if err != nil {
		return nil, fmt.Errorf("dataset custom: %w", err)
	}
	if !columns["prompt"] {
		return nil, valueError(fmt.Sprintf("JSONL file must contain a 'prompt' column. (No line of %s has a \"prompt\" "+
			"field; each line must be an object such as {\"prompt\": \"...\"}.)", env.Path))
	}
	if tok != nil && !env.SkipChatTemplate && env.ChatTemplate == nil {
		return nil, fmt.Errorf("dataset custom: no chat template is available to render prompts (the tokenizer has no chat_template in tokenizer_config.json or chat_template.jinja beside it); pass --skip-chat-template to send the prompts as they are")
	}
	random := shuffleRows(env.Globals, env.Seed, env.DisableShuffle, rows)
	n := sampleTarget(env.NumPrompts, len(rows))
	var reqs []Request
	for i, row := range rows {
		if len(reqs) >= n {
			break
		}
		prompt, err := rowPrompt(row)
		if err != nil {
			return nil, fmt.Errorf("dataset custom %s %w", env.Path, err)
		}
		r := Request{ExpectedOutputLen: 1, PromptLen: 1, RequestID: env.RequestIDPrefix + strconv.Itoa(i)}
		if tok != nil {
			if env.Flags.CustomOutputLen == -1 {
				if !columns["output_tokens"] {
					return nil, valueError(fmt.Sprintf("If no output length is provided the custom dataset must contain an 'output_tokens' field. "+
						"(No line of %s has one; add \"output_tokens\": N to each line, or pass --custom-output-len N.)", env.Path))
				}
				if r.ExpectedOutputLen, err = pyIntField(row.fields["output_tokens"]); err != nil {
					return nil, withPlace(err, env.Path, row.line)
				}
			} else {
				r.ExpectedOutputLen = env.Flags.CustomOutputLen
			}
			if !env.SkipChatTemplate {
				if prompt, err = env.ChatTemplate(prompt, env.ChatTemplateKwargs); err != nil {
					return nil, fmt.Errorf("dataset custom %s line %d: chat template: %w", env.Path, row.line, err)
				}
			}
			r.PromptLen = len(tok.Encode(nil, prompt, true))
		}
		r.Prompt = prompt
		reqs = append(reqs, r)
	}
	return maybeOversample(reqs, n, env.RequestIDPrefix, env.NoOversample, env.Seed, random)
}

// rowPrompt is a row's "prompt", which must be a string. Python reads the
// rows through pandas, where a row without the column holds NaN, and fails
// later on it with a TypeError naming neither the line nor the field; the
// error here says both ("line N has no "prompt" field").
func rowPrompt(row customRow) (string, error) {
	raw, ok := row.fields["prompt"]
	if !ok {
		return "", fmt.Errorf("line %d has no \"prompt\" field (each line must be an object such as {\"prompt\": \"...\"})", row.line)
	}
	var prompt string
	if err := json.Unmarshal(raw, &prompt); err != nil || string(raw) == "null" {
		return "", fmt.Errorf("line %d: \"prompt\" must be a string, got %s", row.line, raw)
	}
	return prompt, nil
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

var customDataset = &Dataset{Name: "custom", Stream: sampled(SampleCustom)}
