package datasets

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// sonnetBasePrompt is the instruction every sonnet prompt starts with.
const sonnetBasePrompt = "Pick as many lines as you can from these poem lines:\n"

// sonnetMaxRejects bounds consecutive over-long prompts; Python loops
// forever when no draw fits --sonnet-input-len.
const sonnetMaxRejects = 100000

// SonnetOptions are the (deprecated) `sonnet` dataset's inputs.
type SonnetOptions struct {
	// Lines are the poem lines, each with its trailing newline as Python's
	// readlines() keeps it; when nil they are read from Path.
	Lines      []string
	Path       string // --dataset-path
	NumPrompts int    // --num-prompts
	InputLen   int    // --sonnet-input-len
	OutputLen  int    // --sonnet-output-len
	PrefixLen  int    // --sonnet-prefix-len
	// ChatTemplate renders prompts; Python measures every prompt templated.
	ChatTemplate ChatTemplate
	// SendFormatted sends the templated prompt (every backend but
	// openai-chat, which gets the raw prompt).
	SendFormatted   bool
	RequestIDPrefix string
	Seed            int64
	// Globals.Random is Python's global random, seeded with --seed and not
	// reseeded here: random.choices draws from it.
	Globals PythonGlobals
}

// SampleSonnet is SonnetDataset.sample: avg = mean token count of a line;
// off = tokens(templated base prompt); n_in = max(round((InputLen -
// off)/avg), 1) lines, of which the first n_pre = max(round((PrefixLen -
// off)/avg), 0) file lines are a shared prefix and the rest are
// random.choices(lines); prompts whose templated token count exceeds
// InputLen are drawn again. Rounding is Python's round(), half to even.
func SampleSonnet(tok Tokenizer, o SonnetOptions) ([]Request, error) {
	if tok == nil {
		return nil, fmt.Errorf("dataset sonnet: a tokenizer is required (drop --skip-tokenizer-init)")
	}
	if o.ChatTemplate == nil {
		return nil, fmt.Errorf("dataset sonnet: the model's chat template is required to measure prompts, and the tokenizer has none (no chat_template in tokenizer_config.json or chat_template.jinja beside it); point --tokenizer at a model directory or Hugging Face name whose tokenizer_config.json has one")
	}
	lines := o.Lines
	if lines == nil {
		if o.Path == "" {
			return nil, valueError("dataset_path must be provided.")
		}
		var err error
		if lines, err = readLinesKeepEnds(o.Path); err != nil {
			return nil, fmt.Errorf("dataset sonnet: %w", err)
		}
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("dataset sonnet %s: the file has no lines", o.Path)
	}
	total := 0
	for _, l := range lines {
		total += len(tok.Encode(nil, l, true))
	}
	avg := float64(total) / float64(len(lines))
	render := func(p string) (string, error) { return o.ChatTemplate(p, nil) }
	baseFmt, err := render(sonnetBasePrompt)
	if err != nil {
		return nil, fmt.Errorf("dataset sonnet: chat template: %w", err)
	}
	off := len(tok.Encode(nil, baseFmt, true))
	if o.InputLen <= off {
		return nil, valueError(fmt.Sprintf("'input_len' must be higher than the base prompt length (%d).", off))
	}
	numInput := max(int(math.RoundToEven(float64(o.InputLen-off)/avg)), 1)
	numPrefix := max(int(math.RoundToEven(float64(o.PrefixLen-off)/avg)), 0)
	prefix := strings.Join(lines[:min(numPrefix, len(lines))], "")

	g := o.Globals.orPrivate(o.Seed)
	reqs := make([]Request, 0, max(o.NumPrompts, 0))
	for rejects := 0; len(reqs) < o.NumPrompts; {
		var b strings.Builder
		b.WriteString(sonnetBasePrompt)
		b.WriteString(prefix)
		for _, i := range g.Random.Choices(len(lines), max(numInput-numPrefix, 0)) {
			b.WriteString(lines[i])
		}
		prompt := b.String()
		formatted, err := render(prompt)
		if err != nil {
			return nil, fmt.Errorf("dataset sonnet: chat template: %w", err)
		}
		promptLen := len(tok.Encode(nil, formatted, true))
		if promptLen > o.InputLen {
			if rejects++; rejects > sonnetMaxRejects {
				return nil, fmt.Errorf("dataset sonnet: no prompt of %d lines fits --sonnet-input-len %d after %d draws; raise --sonnet-input-len", numInput, o.InputLen, rejects)
			}
			continue
		}
		rejects = 0
		if o.SendFormatted {
			prompt = formatted
		}
		reqs = append(reqs, Request{Prompt: prompt, PromptLen: promptLen, ExpectedOutputLen: o.OutputLen, RequestID: o.RequestIDPrefix + strconv.Itoa(len(reqs))})
	}
	return reqs, nil
}

// readLinesKeepEnds is Python's f.readlines(): lines with their "\n".
func readLinesKeepEnds(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return splitLinesKeepEnds(data), nil
}

func splitLinesKeepEnds(data []byte) []string {
	var lines []string
	r := bufio.NewReader(bytes.NewReader(data))
	for {
		line, err := r.ReadString('\n')
		if line != "" {
			lines = append(lines, line)
		}
		if err != nil {
			return lines
		}
	}
}

// SonnetFlags are the sonnet dataset's options.
type SonnetFlags struct {
	SonnetInputLen  int `long:"sonnet-input-len" default:"550" description:"Prompt tokens per request."`
	SonnetOutputLen int `long:"sonnet-output-len" default:"150" description:"Output tokens per request."`
	SonnetPrefixLen int `long:"sonnet-prefix-len" default:"200" description:"Tokens of the prefix shared by every prompt."`
}

var sonnetDataset = &Dataset{
	Name: "sonnet",
	Sample: func(env *Env) ([]Request, error) {
		f := &env.Flags.SonnetFlags
		return SampleSonnet(env.Tokenizer, SonnetOptions{
			Path: env.Path, NumPrompts: env.NumPrompts, InputLen: f.SonnetInputLen,
			OutputLen: f.SonnetOutputLen, PrefixLen: f.SonnetPrefixLen, ChatTemplate: env.ChatTemplate,
			// The chat backend gets the raw prompt (its server applies the
			// template); every other backend the framed one.
			SendFormatted: !env.ChatBackend, RequestIDPrefix: env.RequestIDPrefix,
			Seed: env.Seed, Globals: env.Globals,
		})
	},
}
