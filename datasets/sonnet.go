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

// SampleSonnet is SonnetDataset.sample on the lines of --dataset-path:
// avg = mean token count of a line; off = tokens(templated base prompt);
// n_in = max(round((--sonnet-input-len - off)/avg), 1) lines, of which the
// first n_pre = max(round((--sonnet-prefix-len - off)/avg), 0) file lines
// are a shared prefix and the rest are random.choices(lines) from Python's
// global random (seeded with --seed, not reseeded here); prompts whose
// templated token count exceeds --sonnet-input-len are drawn again.
// Rounding is Python's round(), half to even. Python measures every prompt
// templated; the chat backend is sent the raw prompt (its server applies
// the template), every other backend the templated one.
func SampleSonnet(env *Env) ([]Request, error) {
	if env.Tokenizer == nil {
		return nil, fmt.Errorf("dataset sonnet: a tokenizer is required (drop --skip-tokenizer-init)")
	}
	if env.ChatTemplate == nil {
		return nil, fmt.Errorf("dataset sonnet: the model's chat template is required to measure prompts, and the tokenizer has none (no chat_template in tokenizer_config.json or chat_template.jinja beside it); point --tokenizer at a model directory or Hugging Face name whose tokenizer_config.json has one")
	}
	if env.Path == "" {
		return nil, valueError("dataset_path must be provided.")
	}
	lines, err := readLinesKeepEnds(env.Path)
	if err != nil {
		return nil, fmt.Errorf("dataset sonnet: %w", err)
	}
	tok, f := env.Tokenizer, &env.Flags.SonnetFlags
	if len(lines) == 0 {
		return nil, fmt.Errorf("dataset sonnet %s: the file has no lines", env.Path)
	}
	total := 0
	for _, l := range lines {
		total += len(tok.Encode(nil, l, true))
	}
	avg := float64(total) / float64(len(lines))
	render := func(p string) (string, error) { return env.ChatTemplate(p, nil) }
	baseFmt, err := render(sonnetBasePrompt)
	if err != nil {
		return nil, fmt.Errorf("dataset sonnet: chat template: %w", err)
	}
	off := len(tok.Encode(nil, baseFmt, true))
	if f.SonnetInputLen <= off {
		return nil, valueError(fmt.Sprintf("'input_len' must be higher than the base prompt length (%d).", off))
	}
	numInput := max(int(math.RoundToEven(float64(f.SonnetInputLen-off)/avg)), 1)
	numPrefix := max(int(math.RoundToEven(float64(f.SonnetPrefixLen-off)/avg)), 0)
	prefix := strings.Join(lines[:min(numPrefix, len(lines))], "")

	g := env.Globals.orPrivate(env.Seed)
	reqs := make([]Request, 0, max(env.NumPrompts, 0))
	for rejects := 0; len(reqs) < env.NumPrompts; {
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
		if promptLen > f.SonnetInputLen {
			if rejects++; rejects > sonnetMaxRejects {
				return nil, fmt.Errorf("dataset sonnet: no prompt of %d lines fits --sonnet-input-len %d after %d draws; raise --sonnet-input-len", numInput, f.SonnetInputLen, rejects)
			}
			continue
		}
		rejects = 0
		if !env.Backend.ChatLike {
			prompt = formatted
		}
		reqs = append(reqs, Request{Prompt: prompt, PromptLen: promptLen, ExpectedOutputLen: f.SonnetOutputLen, RequestID: env.RequestIDPrefix + strconv.Itoa(len(reqs))})
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
	Name:   "sonnet",
	Stream: sampled(SampleSonnet),
}
