package datasets

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// speedBenchDownload is where SPEED-Bench's preparation script lives; vLLM's
// errors point there.
const speedBenchDownload = "https://raw.githubusercontent.com/NVIDIA-NeMo/Skills/refs/heads/main/nemo_skills/dataset/speed-bench/prepare.py"

// SpeedBenchSubsets are the accepted --speed-bench-dataset-subset values.
var SpeedBenchSubsets = []string{"qualitative", "throughput_1k", "throughput_2k", "throughput_8k", "throughput_16k", "throughput_32k"}

// SpeedBenchOptions are the `speed_bench` dataset's inputs
// (https://huggingface.co/datasets/nvidia/SPEED-Bench).
type SpeedBenchOptions struct {
	// Path is --dataset-path: the directory holding <Subset>.jsonl.
	Path string
	// Subset is --speed-bench-dataset-subset (default "qualitative").
	Subset     string
	NumPrompts int // --num-prompts; <= 0 takes every row
	// OutputLen is --speed-bench-output-len (default 4096); -1 asks for a
	// per-row output_tokens, which these rows do not have (an error, as in
	// Python).
	OutputLen int
	Category  string // --speed-bench-category; "" keeps every row
	// SkipChatTemplate is --skip-chat-template. Without it each prompt goes
	// through ChatTemplate, which must then be set.
	SkipChatTemplate   bool
	ChatTemplate       ChatTemplate
	ChatTemplateKwargs map[string]any // --chat-template-kwargs
	DisableShuffle     bool           // --disable-shuffle
	NoOversample       bool           // --no-oversample
	RequestIDPrefix    string
	// Globals is the run's Python-global RNG pair; vLLM builds this dataset
	// without passing --seed, so it reseeds random with 0 before shuffling
	// and oversampling.
	Globals PythonGlobals
}

// SampleSpeedBench is SpeedBench: read <Path>/<Subset>.jsonl, keep the rows
// of Category (all when ""), take messages[0].content as the prompt,
// reseed Python's random with 0 and shuffle (unless DisableShuffle), then
// sample as the custom dataset does: the chat template (with
// ChatTemplateKwargs) unless SkipChatTemplate, PromptLen = token count
// with special tokens, ids = positions after shuffling, oversampling when
// short.
func SampleSpeedBench(tok Tokenizer, o SpeedBenchOptions) ([]Request, error) {
	if tok == nil {
		return nil, fmt.Errorf("dataset speed_bench: a tokenizer is required (drop --skip-tokenizer-init)")
	}
	if !o.SkipChatTemplate && o.ChatTemplate == nil {
		return nil, fmt.Errorf("dataset speed_bench: no chat template is available to render prompts (the tokenizer has no chat_template in tokenizer_config.json or chat_template.jinja beside it); pass --skip-chat-template to send the prompts as they are")
	}
	if !slices.Contains(SpeedBenchSubsets, o.Subset) {
		return nil, fmt.Errorf("--speed-bench-dataset-subset %q: want one of %s", o.Subset, strings.Join(SpeedBenchSubsets, ", "))
	}
	if o.Path == "" {
		return nil, valueError("dataset_path must be provided for loading data.")
	}
	if st, err := os.Stat(o.Path); err != nil || !st.IsDir() {
		return nil, valueError(fmt.Sprintf("dataset_path %s is not a directory. Please make sure to download the dataset from HuggingFace using `curl -LsSf %s | python3 -`", o.Path, speedBenchDownload))
	}
	file := filepath.Join(o.Path, o.Subset+".jsonl")
	prompts, err := firstTurnPrompts(file, "messages", o.Category, func(raw json.RawMessage) (string, bool) {
		var messages []struct {
			Content *string `json:"content"`
		}
		if json.Unmarshal(raw, &messages) != nil || len(messages) == 0 || messages[0].Content == nil {
			return "", false
		}
		return *messages[0].Content, true
	}, "JSONL file must contain a 'messages' column. Please make sure to download the dataset from HuggingFace using `curl -LsSf "+speedBenchDownload+" | python3 -`")
	if err != nil {
		return nil, datasetError("speed_bench", err)
	}
	return sampleCustomPrompts(tok, prompts, customPromptOptions{
		dataset:            "speed_bench",
		numPrompts:         o.NumPrompts,
		outputLen:          o.OutputLen,
		skipChatTemplate:   o.SkipChatTemplate,
		chatTemplate:       o.ChatTemplate,
		chatTemplateKwargs: o.ChatTemplateKwargs,
		disableShuffle:     o.DisableShuffle,
		noOversample:       o.NoOversample,
		requestIDPrefix:    o.RequestIDPrefix,
		globals:            o.Globals,
	})
}

// SpeedBenchFlags are the speed_bench dataset's options.
type SpeedBenchFlags struct {
	//lint:ignore SA5008 the flag layer (go-flags) reads one choice tag per value
	SpeedBenchDatasetSubset string `long:"speed-bench-dataset-subset" default:"qualitative" choice:"qualitative" choice:"throughput_1k" choice:"throughput_2k" choice:"throughput_8k" choice:"throughput_16k" choice:"throughput_32k" description:"File <subset>.jsonl of the --dataset-path directory."`
	SpeedBenchOutputLen     int    `long:"speed-bench-output-len" default:"4096" description:"Output tokens per request."`
	SpeedBenchCategory      string `long:"speed-bench-category" description:"Only prompts of this category."`
}

var speedBenchDataset = &Dataset{
	Name: "speed_bench",
	Sample: func(env *Env) ([]Request, error) {
		f := &env.Flags.SpeedBenchFlags
		return SampleSpeedBench(env.Tokenizer, SpeedBenchOptions{
			Path: env.Path, Subset: f.SpeedBenchDatasetSubset, NumPrompts: env.NumPrompts,
			OutputLen: f.SpeedBenchOutputLen, Category: f.SpeedBenchCategory,
			SkipChatTemplate: env.SkipChatTemplate, ChatTemplate: env.ChatTemplate, ChatTemplateKwargs: env.ChatTemplateKwargs,
			DisableShuffle: env.DisableShuffle, NoOversample: env.NoOversample,
			RequestIDPrefix: env.RequestIDPrefix, Globals: env.Globals,
		})
	},
}
