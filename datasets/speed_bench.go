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

// SampleSpeedBench is SpeedBench: read <--dataset-path>/<subset>.jsonl
// (--speed-bench-dataset-subset), keep the rows of --speed-bench-category
// (all when ""), take messages[0].content as the prompt, reseed Python's
// random with 0 and shuffle (unless --disable-shuffle), then sample as the
// custom dataset does: --speed-bench-output-len, the chat template (with
// --chat-template-kwargs) unless --skip-chat-template, PromptLen = token
// count with special tokens, ids = positions after shuffling,
// oversampling when short.
func SampleSpeedBench(env *Env) ([]Request, error) {
	f := &env.Flags.SpeedBenchFlags
	if env.Tokenizer == nil {
		return nil, fmt.Errorf("dataset speed_bench: a tokenizer is required (drop --skip-tokenizer-init)")
	}
	if !env.SkipChatTemplate && env.ChatTemplate == nil {
		return nil, fmt.Errorf("dataset speed_bench: no chat template is available to render prompts (the tokenizer has no chat_template in tokenizer_config.json or chat_template.jinja beside it); pass --skip-chat-template to send the prompts as they are")
	}
	if !slices.Contains(SpeedBenchSubsets, f.SpeedBenchDatasetSubset) {
		return nil, fmt.Errorf("--speed-bench-dataset-subset %q: want one of %s", f.SpeedBenchDatasetSubset, strings.Join(SpeedBenchSubsets, ", "))
	}
	if env.Path == "" {
		return nil, valueError("dataset_path must be provided for loading data.")
	}
	if st, err := os.Stat(env.Path); err != nil || !st.IsDir() {
		return nil, valueError(fmt.Sprintf("dataset_path %s is not a directory. Please make sure to download the dataset from HuggingFace using `curl -LsSf %s | python3 -`", env.Path, speedBenchDownload))
	}
	file := filepath.Join(env.Path, f.SpeedBenchDatasetSubset+".jsonl")
	prompts, err := firstTurnPrompts(file, "messages", f.SpeedBenchCategory, func(raw json.RawMessage) (string, bool) {
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
	if n := env.SpeedBenchMaxInputLen; n > 0 {
		truncatePrompts(env.Tokenizer, prompts, n)
	}
	return sampleCustomPrompts(env, "speed_bench", prompts, f.SpeedBenchOutputLen, !env.SkipChatTemplate, env.ChatTemplateKwargs)
}

// SpeedBenchFlags are the speed_bench dataset's options.
type SpeedBenchFlags struct {
	//lint:ignore SA5008 the flag layer (go-flags) reads one choice tag per value
	SpeedBenchDatasetSubset string `long:"speed-bench-dataset-subset" default:"qualitative" choice:"qualitative" choice:"throughput_1k" choice:"throughput_2k" choice:"throughput_8k" choice:"throughput_16k" choice:"throughput_32k" description:"File <subset>.jsonl of the --dataset-path directory."`
	SpeedBenchOutputLen     int    `long:"speed-bench-output-len" default:"4096" description:"Output tokens per request."`
	SpeedBenchCategory      string `long:"speed-bench-category" description:"Only prompts of this category."`
}

var speedBenchDataset = &Dataset{
	Name:   "speed_bench",
	Stream: sampled(SampleSpeedBench),
}

// truncatePrompts is the Rust client's --speed-bench-max-input-len: each
// prompt longer than maxTokens tokens (counted without special tokens, as
// the text itself) keeps its first maxTokens, decoded back to text, before
// the chat template wraps it.
func truncatePrompts(tok Tokenizer, prompts []string, maxTokens int) {
	var ids []int32
	for i, p := range prompts {
		ids = tok.Encode(ids[:0], p, false)
		if len(ids) > maxTokens {
			prompts[i] = tok.Decode(ids[:maxTokens], false)
		}
	}
}
