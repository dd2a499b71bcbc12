package datasets

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
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
		o    SpecBenchOptions
		want []string
		ids  []string
	}{
		{"all rows shuffled", SpecBenchOptions{NumPrompts: 0},
			wrap("Is 97 prime?", "What is 7 times 8?", "Draft a professional email.", "Compose a travel blog post about Hawaii.", "Summarise the passage below.", "Translate 'bonjour' into English."),
			[]string{"s0", "s1", "s2", "s3", "s4", "s5"}},
		{"first two in file order", SpecBenchOptions{NumPrompts: 2, DisableShuffle: true},
			wrap("Compose a travel blog post about Hawaii.", "Draft a professional email."), []string{"s0", "s1"}},
		{"category, oversampled", SpecBenchOptions{NumPrompts: 5, Category: "math"},
			wrap("What is 7 times 8?", "Is 97 prime?", "Is 97 prime?", "Is 97 prime?", "What is 7 times 8?"),
			[]string{"s0", "s1", "s2", "s3", "s4"}},
		{"category, not oversampled", SpecBenchOptions{NumPrompts: 5, Category: "math", NoOversample: true},
			wrap("What is 7 times 8?", "Is 97 prime?"), []string{"s0", "s1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			o.Path, o.OutputLen, o.ChatTemplate, o.RequestIDPrefix = path, 256, bracketTemplate, "s"
			g, _ := NewPythonGlobals(99)
			o.Globals = g
			reqs, err := SampleSpecBench(tok, o)
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
		o    SpecBenchOptions
		want string
		py   bool
	}{
		{"no turns column", SpecBenchOptions{Path: writeFile(t, "q.jsonl", `{"prompt": "x"}`+"\n"), OutputLen: 1}, "JSONL file must contain a 'turns' column.", true},
		{"category without column", SpecBenchOptions{Path: writeFile(t, "q.jsonl", `{"turns": ["x"]}`+"\n"), Category: "math", OutputLen: 1}, "'category'", true},
		{"output len -1", SpecBenchOptions{Path: good, OutputLen: -1}, "If no output length is provided the custom dataset must contain an 'output_tokens' field.", true},
		{"no path", SpecBenchOptions{OutputLen: 1}, "dataset_path must be provided for loading data.", true},
		{"turns not a list", SpecBenchOptions{Path: writeFile(t, "q.jsonl", `{"turns": 5}`+"\n"), OutputLen: 1}, `line 1: cannot take the prompt from "turns": 5`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.o.ChatTemplate = bracketTemplate
			_, err := SampleSpecBench(tok, c.o)
			checkDatasetError(t, err, c.want, c.py)
		})
	}
	if _, err := SampleSpecBench(tok, SpecBenchOptions{Path: good, OutputLen: 1}); err == nil || !strings.Contains(err.Error(), "--skip-chat-template does not apply") {
		t.Errorf("no template: %v", err)
	}
}

func TestSampleSpeedBench(t *testing.T) {
	tok := newBPETokenizer()
	dir := filepath.Join("testdata", "speed_bench")
	reqs, err := SampleSpeedBench(tok, SpeedBenchOptions{Path: dir, Subset: "qualitative", OutputLen: 4096, SkipChatTemplate: true, RequestIDPrefix: "q"})
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

	reqs, err = SampleSpeedBench(tok, SpeedBenchOptions{Path: dir, Subset: "qualitative", OutputLen: 7, Category: "coding",
		ChatTemplate: bracketTemplate, ChatTemplateKwargs: map[string]any{"mode": "think"}})
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
		o    SpeedBenchOptions
		want string
		py   bool
	}{
		{"path is a file", SpeedBenchOptions{Path: file, Subset: "qualitative", SkipChatTemplate: true},
			"dataset_path " + file + " is not a directory. Please make sure to download the dataset from HuggingFace using `curl -LsSf " + speedBenchDownload + " | python3 -`", true},
		{"no messages column", SpeedBenchOptions{Path: filepath.Dir(writeFile(t, "throughput_1k.jsonl", `{"turns": ["x"]}`+"\n")), Subset: "throughput_1k", SkipChatTemplate: true},
			"JSONL file must contain a 'messages' column. Please make sure to download the dataset from HuggingFace using `curl -LsSf " + speedBenchDownload + " | python3 -`", true},
		{"missing subset file", SpeedBenchOptions{Path: dir, Subset: "throughput_8k", SkipChatTemplate: true}, "throughput_8k.jsonl: no such file", false},
		{"unknown subset", SpeedBenchOptions{Path: dir, Subset: "../x", SkipChatTemplate: true}, `--speed-bench-dataset-subset "../x": want one of qualitative,`, false},
		{"no template", SpeedBenchOptions{Path: dir, Subset: "qualitative"}, "pass --skip-chat-template", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := SampleSpeedBench(tok, c.o)
			checkDatasetError(t, err, c.want, c.py)
		})
	}
}

// checkDatasetError wants a *PythonError with exactly want, or another
// error containing want.
func checkDatasetError(t *testing.T, err error, want string, python bool) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %q", want)
	}
	var pyErr *PythonError
	if isPy := errors.As(err, &pyErr); isPy != python {
		t.Errorf("PythonError = %v, want %v: %v", isPy, python, err)
	}
	if python && err.Error() != want || !python && !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want %q", err, want)
	}
}
