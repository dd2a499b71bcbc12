package datasets

// Dataset is one --dataset-name value: the name, what the run must provide
// or do around it, and how it samples. Each dataset declares its Dataset
// in its own file; Registry lists them.
type Dataset struct {
	// Name is the --dataset-name value.
	Name string
	// Synthetic datasets make their prompts up; they refuse --dataset-path.
	Synthetic bool
	// ExactOutputLen datasets ask for exactly their output lengths: the run
	// sends ignore_eos with the openai-compatible backends.
	ExactOutputLen bool
	// AlignWithServer re-tokenizes the sampled prompts with the server's
	// /tokenize after sampling (AlignWithServer).
	AlignWithServer bool
	// SelfTimed datasets are traces: prompts are token-id lists (so they
	// need a completions backend) with their own send times, used unless
	// --no-self-timed, and their output lengths are exact (ignore_eos).
	SelfTimed bool
	// Stream draws the requests and hands them to emit in order, a batch
	// at a time; nil when stampede does not build the dataset yet (its
	// flags still parse). The random datasets build their prompts a window
	// at a time, so a run holds a window of prompts, not all of them; the
	// others read or build them whole and emit them at once (sampled).
	Stream func(env *Env, emit Emit) error
}

// Emit receives a dataset's requests in order, a batch at a time. It may
// change the batch's requests (alignment, token ids) but not keep the
// slice once it returns; an error it returns stops the sampling and comes
// back from Stream.
type Emit func(batch []Request) error

// Built reports whether stampede can sample d.
func (d *Dataset) Built() bool { return d.Stream != nil }

// Collect samples d whole: every request in one slice, for the callers
// that need them all at once (tests, small datasets).
func (d *Dataset) Collect(env *Env) ([]Request, error) {
	var all []Request
	err := d.Stream(env, func(batch []Request) error {
		all = append(all, batch...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return all, nil
}

// sampled is the Stream of a dataset that builds every request before it
// hands any over: one batch of all of them.
func sampled(sample func(env *Env) ([]Request, error)) func(*Env, Emit) error {
	return func(env *Env, emit Emit) error {
		reqs, err := sample(env)
		if err != nil {
			return err
		}
		return emit(reqs)
	}
}

// Registry is every --dataset-name choice, in the order `vllm bench serve`
// lists them. Adding a dataset is one file declaring its *Dataset, its
// Sample<Name>(env *Env) (or Stream<Name>) and, when it brings options, its flag group
// (embedded in Flags in Python's group order), and one row here.
var Registry = []*Dataset{
	shareGPTDataset,
	burstGPTDataset,
	sonnetDataset,
	randomDataset,
	randomMMDataset,
	randomRerankDataset,
	hfDataset,
	customDataset,
	customAudioDataset,
	customImageDataset,
	prefixRepetitionDataset,
	specBenchDataset,
	speedBenchDataset,
	timedTraceDataset,
}

// Lookup returns the dataset called name, or nil.
func Lookup(name string) *Dataset {
	for _, d := range Registry {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// Names are the --dataset-name choices in Registry order.
func Names() []string {
	names := make([]string, len(Registry))
	for i, d := range Registry {
		names[i] = d.Name
	}
	return names
}

// Env is what every dataset samples with: the run-wide inputs, the common
// dataset options and every dataset's option group.
type Env struct {
	// Tokenizer counts and cuts prompt tokens; nil with
	// --skip-tokenizer-init.
	Tokenizer Tokenizer
	// ChatTemplate renders a prompt as the tokenizer's chat template does;
	// nil when the tokenizer has none.
	ChatTemplate ChatTemplate
	// ChatTemplateKwargs is --chat-template-kwargs as an object.
	ChatTemplateKwargs map[string]any
	// ChatRender renders a conversation (a JSON list of messages) and
	// tools (a JSON list, nil for none) through the tokenizer's chat
	// template with add_generation_prompt; nil when it has none.
	ChatRender func(messages, tools []byte) (string, error)
	// TokenizerName is the name the tokenizer was loaded by (--tokenizer,
	// else the model): Hugging Face's name_or_path.
	TokenizerName string
	// Globals are Python's process-wide generators, seeded with Seed.
	Globals PythonGlobals
	// Seed is --seed.
	Seed int64
	// NumPrompts is --num-prompts.
	NumPrompts int
	// RequestIDPrefix is --request-id-prefix.
	RequestIDPrefix string
	// Backend is what the datasets whose Python code reads --backend
	// need of it; the zero value (no name) skips their backend checks.
	Backend Backend
	// Workers bounds the goroutines doing tokenizer work (and random-mm's
	// JPEG encoding) in the random* datasets; 0 means one per usable CPU.
	// With a ServerTokenizer each round is an HTTP call, so more workers
	// than CPUs (e.g. 64) keep the server busy.
	Workers int
	// Logf writes one log line (no trailing newline needed).
	Logf func(format string, args ...any)

	// Path is --dataset-path.
	Path string
	// NoStream is --no-stream: hf datasets are loaded whole, not streamed.
	NoStream bool
	// The common dataset options.
	DisableShuffle, NoOversample, SkipChatTemplate, EnableMultimodalChat bool

	// The Rust client's dataset options (bench/plan's RustClient), zero
	// when not given. HFTextColumn is --hf-text-column: the hf dataset's
	// prompts are that column's text, whatever the dataset.
	// SpeedBenchMaxInputLen is --speed-bench-max-input-len: speed_bench
	// prompts cut to at most that many tokens.
	HFTextColumn          string
	SpeedBenchMaxInputLen int

	// Flags are the parsed dataset option groups.
	Flags *Flags
}
