package datasets

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/internal/py"
)

// bracketTemplate is a stand-in chat template that shows its kwargs.
func bracketTemplate(prompt string, kwargs map[string]any) (string, error) {
	return fmt.Sprintf("<user %v>%s</user>", kwargs["mode"], prompt), nil
}

func promptsAndIDs(reqs []Request) (prompts, ids []string) {
	for _, r := range reqs {
		prompts = append(prompts, r.Prompt)
		ids = append(ids, r.RequestID)
	}
	return prompts, ids
}

// Orders were printed by CPython 3.11: random.seed(0);
// random.shuffle(prompts), and for oversampling random.seed(0);
// [random.choice(range(2)) for _ in range(3)] == [1, 1, 0].
func TestSampleSpecBench(t *testing.T) {
	tok := newBPETokenizer()
	path := filepath.Join("testdata", "spec_bench", "question.jsonl")
	wrap := func(ps ...string) []string {
		for i, p := range ps {
			ps[i] = "<user <nil>>" + p + "</user>"
		}
		return ps
	}
	cases := []struct {
		name string
		o    *Env
		want []string
		ids  []string
	}{
		{"all rows shuffled", &Env{NumPrompts: 0, Flags: &Flags{}},
			wrap("Is 97 prime?", "What is 7 times 8?", "Draft a professional email.", "Compose a travel blog post about Hawaii.", "Summarise the passage below.", "Translate 'bonjour' into English."),
			[]string{"s0", "s1", "s2", "s3", "s4", "s5"}},
		{"first two in file order", &Env{NumPrompts: 2, DisableShuffle: true, Flags: &Flags{}},
			wrap("Compose a travel blog post about Hawaii.", "Draft a professional email."), []string{"s0", "s1"}},
		{"category, oversampled", &Env{NumPrompts: 5, Flags: &Flags{SpecBenchFlags: SpecBenchFlags{SpecBenchCategory: "math"}}},
			wrap("What is 7 times 8?", "Is 97 prime?", "Is 97 prime?", "Is 97 prime?", "What is 7 times 8?"),
			[]string{"s0", "s1", "s2", "s3", "s4"}},
		{"category, not oversampled", &Env{NumPrompts: 5, NoOversample: true, Flags: &Flags{SpecBenchFlags: SpecBenchFlags{SpecBenchCategory: "math"}}},
			wrap("What is 7 times 8?", "Is 97 prime?"), []string{"s0", "s1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			o.Tokenizer, o.Path, o.Flags.SpecBenchOutputLen, o.ChatTemplate, o.RequestIDPrefix = tok, path, 256, bracketTemplate, "s"
			g, _ := NewPythonGlobals(99)
			o.Globals = g
			reqs, err := SampleSpecBench(o)
			if err != nil {
				t.Fatal(err)
			}
			prompts, ids := promptsAndIDs(reqs)
			if !reflect.DeepEqual(prompts, c.want) || !reflect.DeepEqual(ids, c.ids) {
				t.Errorf("got %q %q\nwant %q %q", prompts, ids, c.want, c.ids)
			}
			for _, r := range reqs {
				if r.ExpectedOutputLen != 256 || r.PromptLen != len(tok.Encode(nil, r.Prompt, true)) {
					t.Errorf("%q: output %d, prompt_len %d", r.Prompt, r.ExpectedOutputLen, r.PromptLen)
				}
			}
		})
	}
}

func TestSampleSpecBenchErrors(t *testing.T) {
	tok := newBPETokenizer()
	good := filepath.Join("testdata", "spec_bench", "question.jsonl")
	cases := []struct {
		name string
		o    *Env
		want string
		py   bool
	}{
		{"no turns column", &Env{Path: writeFile(t, "q.jsonl", `{"prompt": "x"}`+"\n"), Flags: &Flags{SpecBenchFlags: SpecBenchFlags{SpecBenchOutputLen: 1}}}, "JSONL file must contain a 'turns' column.", true},
		{"category without column", &Env{Path: writeFile(t, "q.jsonl", `{"turns": ["x"]}`+"\n"), Flags: &Flags{SpecBenchFlags: SpecBenchFlags{SpecBenchCategory: "math", SpecBenchOutputLen: 1}}}, "'category'", true},
		{"output len -1", &Env{Path: good, Flags: &Flags{SpecBenchFlags: SpecBenchFlags{SpecBenchOutputLen: -1}}}, "If no output length is provided the custom dataset must contain an 'output_tokens' field.", true},
		{"no path", &Env{Flags: &Flags{SpecBenchFlags: SpecBenchFlags{SpecBenchOutputLen: 1}}}, "dataset_path must be provided for loading data.", true},
		{"turns not a list", &Env{Path: writeFile(t, "q.jsonl", `{"turns": 5}`+"\n"), Flags: &Flags{SpecBenchFlags: SpecBenchFlags{SpecBenchOutputLen: 1}}}, `line 1: cannot take the prompt from "turns": 5`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.o.Tokenizer, c.o.ChatTemplate = tok, bracketTemplate
			_, err := SampleSpecBench(c.o)
			checkDatasetError(t, err, c.want, c.py)
		})
	}
	if _, err := SampleSpecBench(&Env{Tokenizer: tok, Path: good, Flags: &Flags{SpecBenchFlags: SpecBenchFlags{SpecBenchOutputLen: 1}}}); err == nil || !strings.Contains(err.Error(), "--skip-chat-template does not apply") {
		t.Errorf("no template: %v", err)
	}
}

func TestSampleSpeedBench(t *testing.T) {
	tok := newBPETokenizer()
	dir := filepath.Join("testdata", "speed_bench")
	reqs, err := SampleSpeedBench(&Env{Tokenizer: tok, Path: dir, SkipChatTemplate: true, RequestIDPrefix: "q", Flags: &Flags{SpeedBenchFlags: SpeedBenchFlags{SpeedBenchDatasetSubset: "qualitative", SpeedBenchOutputLen: 4096}}})
	if err != nil {
		t.Fatal(err)
	}
	prompts, ids := promptsAndIDs(reqs)
	want := []string{"Explain a mutex.", "Write a quicksort in Go.", "Why is the sky blue?", "Who wrote Hamlet?"}
	if !reflect.DeepEqual(prompts, want) || !reflect.DeepEqual(ids, []string{"q0", "q1", "q2", "q3"}) {
		t.Errorf("got %q %q, want %q", prompts, ids, want)
	}
	if reqs[0].ExpectedOutputLen != 4096 || reqs[0].PromptLen != len(tok.Encode(nil, want[0], true)) {
		t.Errorf("lengths %d/%d", reqs[0].PromptLen, reqs[0].ExpectedOutputLen)
	}

	reqs, err = SampleSpeedBench(&Env{Tokenizer: tok, Path: dir, ChatTemplate: bracketTemplate, ChatTemplateKwargs: map[string]any{"mode": "think"}, Flags: &Flags{SpeedBenchFlags: SpeedBenchFlags{SpeedBenchDatasetSubset: "qualitative", SpeedBenchOutputLen: 7, SpeedBenchCategory: "coding"}}})
	if err != nil {
		t.Fatal(err)
	}
	prompts, _ = promptsAndIDs(reqs)
	if want := []string{"<user think>Write a quicksort in Go.</user>", "<user think>Explain a mutex.</user>"}; !reflect.DeepEqual(prompts, want) {
		t.Errorf("coding, templated: %q, want %q", prompts, want)
	}
}

func TestSampleSpeedBenchErrors(t *testing.T) {
	tok := newBPETokenizer()
	dir := filepath.Join("testdata", "speed_bench")
	file := filepath.Join(dir, "qualitative.jsonl")
	cases := []struct {
		name string
		o    *Env
		want string
		py   bool
	}{
		{"path is a file", &Env{Path: file, SkipChatTemplate: true, Flags: &Flags{SpeedBenchFlags: SpeedBenchFlags{SpeedBenchDatasetSubset: "qualitative"}}},
			"dataset_path " + file + " is not a directory. Please make sure to download the dataset from HuggingFace using `curl -LsSf " + speedBenchDownload + " | python3 -`", true},
		{"no messages column", &Env{Path: filepath.Dir(writeFile(t, "throughput_1k.jsonl", `{"turns": ["x"]}`+"\n")), SkipChatTemplate: true, Flags: &Flags{SpeedBenchFlags: SpeedBenchFlags{SpeedBenchDatasetSubset: "throughput_1k"}}},
			"JSONL file must contain a 'messages' column. Please make sure to download the dataset from HuggingFace using `curl -LsSf " + speedBenchDownload + " | python3 -`", true},
		{"missing subset file", &Env{Path: dir, SkipChatTemplate: true, Flags: &Flags{SpeedBenchFlags: SpeedBenchFlags{SpeedBenchDatasetSubset: "throughput_8k"}}}, "throughput_8k.jsonl: no such file", false},
		{"unknown subset", &Env{Path: dir, SkipChatTemplate: true, Flags: &Flags{SpeedBenchFlags: SpeedBenchFlags{SpeedBenchDatasetSubset: "../x"}}}, `--speed-bench-dataset-subset "../x": want one of qualitative,`, false},
		{"no template", &Env{Path: dir, Flags: &Flags{SpeedBenchFlags: SpeedBenchFlags{SpeedBenchDatasetSubset: "qualitative"}}}, "pass --skip-chat-template", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.o.Tokenizer = tok
			_, err := SampleSpeedBench(c.o)
			checkDatasetError(t, err, c.want, c.py)
		})
	}
}

// checkDatasetError wants a *py.Error with exactly want, or another
// error containing want.
func checkDatasetError(t *testing.T, err error, want string, python bool) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %q", want)
	}
	var pyErr *py.Error
	if isPy := errors.As(err, &pyErr); isPy != python {
		t.Errorf("py.Error = %v, want %v: %v", isPy, python, err)
	}
	if python && err.Error() != want || !python && !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want %q", err, want)
	}
}

// --speed-bench-max-input-len cuts each prompt to its first N tokens
// before the template; shorter prompts stay whole.
func TestSampleSpeedBenchMaxInputLen(t *testing.T) {
	tok := newBPETokenizer()
	dir := filepath.Join("testdata", "speed_bench")
	const n = 3
	reqs, err := SampleSpeedBench(&Env{Tokenizer: tok, Path: dir, SkipChatTemplate: true, SpeedBenchMaxInputLen: n,
		Flags: &Flags{SpeedBenchFlags: SpeedBenchFlags{SpeedBenchDatasetSubset: "qualitative", SpeedBenchOutputLen: 8}}})
	if err != nil {
		t.Fatal(err)
	}
	full := []string{"Explain a mutex.", "Write a quicksort in Go.", "Why is the sky blue?", "Who wrote Hamlet?"}
	cut := 0
	for i, r := range reqs {
		ids := tok.Encode(nil, full[i], false)
		want := full[i]
		if len(ids) > n {
			want = tok.Decode(ids[:n], false)
			cut++
		}
		if r.Prompt != want || len(tok.Encode(nil, r.Prompt, false)) > n {
			t.Errorf("request %d prompt %q, want %q (at most %d tokens)", i, r.Prompt, want, n)
		}
	}
	if cut == 0 {
		t.Fatalf("no prompt is longer than %d tokens: the test cuts nothing", n)
	}
}
