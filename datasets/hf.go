package datasets

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/datasets/hfhub"
	"github.com/stampede-bench/stampede/datasets/pyrand"
	"github.com/stampede-bench/stampede/internal/py"
)

// --dataset-name hf: --dataset-path (or --hf-name, for a local copy)
// picks one of vLLM's HuggingFaceDataset classes, each declared in its
// own hf_*.go file as an hfClass in hfClasses. The split is read with
// package hfhub (local directory, hub cache, or download) in
// load_dataset's order and shuffled as vLLM's load_data does.

// BlazeditFlags are the blazedit dataset's options.
type BlazeditFlags struct {
	BlazeditMinDistance float64 `long:"blazedit-min-distance" default:"0.0" description:"Smallest edit distance kept."`
	BlazeditMaxDistance float64 `long:"blazedit-max-distance" default:"1.0" description:"Largest edit distance kept."`
}

// ASRFlags are the speech-recognition datasets' options.
type ASRFlags struct {
	ASRMaxAudioLenSec float64 `long:"asr-max-audio-len-sec" default:"inf" description:"Drop clips longer than this many seconds."`
	ASRMinAudioLenSec float64 `long:"asr-min-audio-len-sec" default:"0.0" description:"Drop clips shorter than this many seconds."`
}

// HFFlags are the Hugging Face datasets' options.
type HFFlags struct {
	HFSubset    string `long:"hf-subset" description:"Dataset subset (config) name."`
	HFSplit     string `long:"hf-split" description:"Dataset split (default: the dataset's own)."`
	HFName      string `long:"hf-name" description:"Hugging Face id of a dataset given as a local --dataset-path."`
	HFOutputLen *int   `long:"hf-output-len" copy-of:"output-len" description:"Output tokens per request (default: the dataset's own)."`
}

// BFCLFlags are the Berkeley Function Calling Leaderboard dataset's options.
type BFCLFlags struct {
	BFCLCategories CommaList `long:"bfcl-categories" description:"Comma-separated categories (default: simple,live_simple,multiple)."`
}

var hfDataset = &Dataset{Name: "hf", Stream: sampled(sampleHF)}

// hfClass is one of vLLM's HuggingFaceDataset subclasses.
type hfClass struct {
	name  string   // the Python class, for messages
	paths []string // SUPPORTED_DATASET_PATHS
	// pathOnly classes match --dataset-path only, not --hf-name
	// (Blazedit).
	pathOnly bool
	// split is the default --hf-split ("" keeps None).
	split string
	// subset is the default --hf-subset; clearSubset drops a given one.
	subset      string
	clearSubset bool
	// multimodal is IS_MULTIMODAL: only chat, audio and embeddings
	// backends may send it.
	multimodal bool
	// noLoad classes read their own files (BFCL).
	noLoad bool
	sample func(h *hfRun) ([]Request, error)
}

// hfClasses are checked in get_samples' order.
var hfClasses = []*hfClass{
	visionArenaClass,
	mmvuClass,
	instructCoderClass,
	mtBenchClass,
	humanEvalClass,
	gsm8kClass,
	multiModalConversationClass,
	conversationClass,
	aimoClass,
	nextEditClass,
	asrClass,
	blazeditClass,
	mlperfClass,
	mmstarClass,
	bfclClass,
}

// hfRun is one sampling of an hf dataset: the run's inputs and the split.
type hfRun struct {
	env    *Env
	class  *hfClass
	path   string // --dataset-path
	name   string // hf_name: --hf-name, else --dataset-path
	subset string
	split  string
	src    *hfhub.Source
	rows   *hfhub.Rows
	hub    hfhub.Options
}

func sampleHF(env *Env) ([]Request, error) {
	f := env.Flags
	class := findHFClass(env.Path, f.HFName)
	if env.HFTextColumn != "" {
		class = columnClass
	}
	if class == nil {
		return nil, valueError(fmt.Sprintf("Unsupported dataset path: %s. Huggingface dataset only supports dataset_path from one of following: %s. Please consider contributing if you would like to add support for additional dataset formats.",
			pyNone(env.Path), knownHFPaths()))
	}
	if class == bfclClass && !env.Backend.ChatLike {
		return nil, valueError("BFCL dataset requires the 'openai-chat' backend because it sends per-request tool schemas via chat completions.")
	}
	if class.multimodal && !env.Backend.Multimodal && !env.Backend.EmbedsMedia {
		return nil, valueError(fmt.Sprintf("Multi-modal content is not supported on backend '%s'; use one of ['openai-audio', 'openai-chat'].", env.Backend.Name))
	}
	if env.Tokenizer == nil {
		return nil, &py.Error{Type: "AssertionError", Msg: "Tokenizer must be initialized for the 'hf' dataset."}
	}
	h := &hfRun{env: env, class: class, path: env.Path, name: f.HFName, subset: f.HFSubset, split: f.HFSplit}
	if h.name == "" {
		h.name = env.Path
	}
	if h.split == "" {
		h.split = class.split
	}
	if class.clearSubset {
		h.subset = ""
	} else if h.subset == "" {
		h.subset = class.subset
	}
	if env.Path == "" {
		return nil, valueError("--dataset-path is required with --dataset-name hf: a hub dataset id such as " + class.paths[0] + ", or a local copy with --hf-name")
	}
	if !class.noLoad {
		if h.split == "" {
			// load_dataset(split=None) returns every split at once, which
			// vLLM's classes cannot iterate as rows.
			return nil, valueError(fmt.Sprintf("%s: --hf-split is required (the dataset has no default split in vLLM)", class.name))
		}
		if err := h.open(); err != nil {
			return nil, err
		}
		defer h.rows.Close()
	}
	return class.sample(h)
}

// open locates the split and starts reading it in vLLM's order.
func (h *hfRun) open() error {
	src, err := hfhub.Locate(h.path, h.subset, h.split, h.hub)
	if err != nil {
		var se *hfhub.SplitError
		if errors.As(err, &se) {
			return valueError(se.Msg)
		}
		return fmt.Errorf("dataset hf: %w", err)
	}
	if len(src.Files) == 0 {
		return valueError(fmt.Sprintf("dataset hf: split %q of %s has no Parquet, JSON or JSON-lines files", h.split, h.path))
	}
	// Earnings22-Cleaned is loaded whole in vLLM whatever --no-stream says.
	stream := !h.env.NoStream && !(h.class == asrClass && h.name == asrEarnings22Cleaned)
	rows, err := hfhub.Open(src.Files, hfhub.Order{Shuffle: !h.env.DisableShuffle, Stream: stream, Seed: h.env.Seed})
	if err != nil {
		return fmt.Errorf("dataset hf: %w", err)
	}
	h.src, h.rows = src, rows
	return nil
}

// each calls fn for rows in order until fn says stop or the rows end.
func (h *hfRun) each(fn func(i int, row *hfhub.Object) (stop bool, err error)) error {
	for i := 0; ; i++ {
		row, err := h.rows.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("dataset hf: %w", err)
		}
		stop, err := fn(i, row)
		if err != nil || stop {
			return err
		}
	}
}

// outputLen is --hf-output-len, else def.
func (h *hfRun) outputLen(def int) int {
	if p := h.env.Flags.HFOutputLen; p != nil {
		return *p
	}
	return def
}

// tokens is len(tokenizer(text).input_ids): with special tokens.
func (h *hfRun) tokens(text string) int { return len(h.env.Tokenizer.Encode(nil, text, true)) }

// id is request_id_prefix + str(k).
func (h *hfRun) id(k int) string { return h.env.RequestIDPrefix + strconv.Itoa(k) }

// userTemplate is apply_chat_template([{"role": "user", "content": p}],
// add_generation_prompt=True, tokenize=False).
// sampleText is the text classes' sampling: the first --num-prompts rows
// that prompt keeps (keep false skips a row; its position still counts in
// the ids), each templated as the user's message unless
// --skip-chat-template, out tokens expected; then oversampled.
func (h *hfRun) sampleText(out int, prompt func(row *hfhub.Object) (p string, keep bool, err error)) ([]Request, error) {
	var reqs []Request
	err := h.each(func(i int, row *hfhub.Object) (bool, error) {
		if len(reqs) >= h.env.NumPrompts {
			return true, nil
		}
		p, keep, err := prompt(row)
		if err != nil || !keep {
			return err != nil, err
		}
		if !h.env.SkipChatTemplate {
			if p, err = h.userTemplate(p); err != nil {
				return true, err
			}
		}
		reqs = append(reqs, Request{Prompt: p, PromptLen: h.tokens(p), ExpectedOutputLen: out, RequestID: h.id(i)})
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return h.oversample(reqs)
}

func (h *hfRun) userTemplate(prompt string) (string, error) {
	if h.env.ChatTemplate == nil {
		return "", fmt.Errorf("dataset hf (%s): no chat template is available to render prompts (the tokenizer has no chat_template in tokenizer_config.json or chat_template.jinja beside it); pass --skip-chat-template to send the prompts as they are", h.class.name)
	}
	out, err := h.env.ChatTemplate(prompt, nil)
	if err != nil {
		return "", fmt.Errorf("dataset hf (%s): chat template: %w", h.class.name, err)
	}
	return out, nil
}

// oversample is maybe_oversample_requests with the run's global random.
func (h *hfRun) oversample(reqs []Request) ([]Request, error) {
	return maybeOversample(reqs, h.env.NumPrompts, h.env.RequestIDPrefix, h.env.NoOversample, h.env.Seed, h.globalRandom())
}

func (h *hfRun) globalRandom() *pyrand.Random {
	return h.env.Globals.orPrivate(h.env.Seed).Random
}

// findHFClass is get_samples' if/elif chain.
func findHFClass(path, hfName string) *hfClass {
	for _, c := range hfClasses {
		for _, p := range c.paths {
			if p == path || (!c.pathOnly && hfName != "" && p == hfName) {
				return c
			}
		}
	}
	return nil
}

// knownHFPaths is the supported paths as a Python set literal (sorted;
// Python's set order varies from run to run).
func knownHFPaths() string {
	var all []string
	for _, c := range hfClasses {
		all = append(all, c.paths...)
	}
	sort.Strings(all)
	return "{'" + strings.Join(all, "', '") + "'}"
}

// HFDatasetPaths lists every --dataset-path the hf dataset accepts.
func HFDatasetPaths() []string {
	var all []string
	for _, c := range hfClasses {
		all = append(all, c.paths...)
	}
	return all
}

func pyNone(s string) string {
	if s == "" {
		return "None"
	}
	return s
}

// field returns row[key], or Python's KeyError.
func field(row *hfhub.Object, key string) (any, error) {
	v, ok := row.Get(key)
	if !ok {
		return nil, &py.Error{Type: "KeyError", Msg: "'" + key + "'"}
	}
	return v, nil
}

// strField returns row[key] as a str; anything else is the TypeError the
// tokenizer (or string concatenation) raises.
func strField(row *hfhub.Object, key string) (string, error) {
	v, err := field(row, key)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", &py.Error{Type: "TypeError", Msg: fmt.Sprintf("column %q holds %s, want a str", key, pyTypeName(v))}
	}
	return s, nil
}

// rowFields reads a row's columns one after another and keeps the first
// error (field's KeyError or strField's TypeError), after which it reads
// nothing more: a class reads its columns, then checks err once, and
// fails as its Python does at the first column that is wrong.
type rowFields struct {
	row *hfhub.Object
	err error
}

// get is field(row, key).
func (f *rowFields) get(key string) any {
	if f.err != nil {
		return nil
	}
	v, err := field(f.row, key)
	f.err = err
	return v
}

// str is strField(row, key).
func (f *rowFields) str(key string) string {
	if f.err != nil {
		return ""
	}
	s, err := strField(f.row, key)
	f.err = err
	return s
}

// pyTypeName is type(v).__name__ for a row value.
func pyTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case string:
		return "str"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case []byte:
		return "bytes"
	case []any:
		return "list"
	case *hfhub.Object:
		return "dict"
	}
	return fmt.Sprintf("%T", v)
}

// pyStr is str(v) for the row values an f-string or str.format meets.
func pyStr(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return pyRepr(v)
}

// pyRepr is repr(v) for row values: internal/py's repr, with bytes and
// row objects (dicts in key order) added.
func pyRepr(v any) string {
	var b strings.Builder
	py.AppendRepr(&b, v, appendRowRepr)
	return b.String()
}

func appendRowRepr(b *strings.Builder, v any) {
	switch v := v.(type) {
	case []byte:
		b.WriteString("b" + py.StrRepr(string(v)))
	case *hfhub.Object:
		b.WriteByte('{')
		for i, k := range v.Keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(py.StrRepr(k))
			b.WriteString(": ")
			py.AppendRepr(b, v.Fields[k], appendRowRepr)
		}
		b.WriteByte('}')
	default:
		fmt.Fprintf(b, "%v", v)
	}
}
