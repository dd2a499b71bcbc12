package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/datasets/pyrand"
	"github.com/stampede-bench/stampede/internal/py"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// shareGPTFile writes n valid conversations whose prompts are "prompt k
// ..." and one entry with a single turn, which is always dropped.
func shareGPTFile(t *testing.T, n int) string {
	t.Helper()
	var entries []any
	entries = append(entries, map[string]any{"conversations": []any{map[string]string{"value": "lonely"}}})
	for k := range n {
		entries = append(entries, map[string]any{"conversations": []any{
			map[string]string{"from": "human", "value": fmt.Sprintf("prompt %d asks about the weather", k)},
			map[string]string{"from": "gpt", "value": fmt.Sprintf("answer %d: it is raining", k)},
		}})
	}
	b, _ := json.Marshal(entries)
	return writeFile(t, "sharegpt.json", string(b))
}

func TestSampleShareGPTShufflesLikePython(t *testing.T) {
	tok := newBPETokenizer()
	path := shareGPTFile(t, 30)
	reqs, err := SampleShareGPT(&Env{Tokenizer: tok, Path: path, NumPrompts: 5, Seed: 3, RequestIDPrefix: "s-", Flags: &Flags{}})
	if err != nil {
		t.Fatal(err)
	}
	// The 30 kept entries in the order random.seed(3); random.shuffle(x)
	// leaves them.
	order := make([]int, 30)
	for i := range order {
		order[i] = i
	}
	pyrand.NewRandom(3).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	for i, r := range reqs {
		if want := fmt.Sprintf("prompt %d asks about the weather", order[i]); r.Prompt != want {
			t.Errorf("request %d prompt %q, want %q", i, r.Prompt, want)
		}
		if r.RequestID != fmt.Sprintf("s-%d", i) || r.PromptLen != len(tok.Encode(nil, r.Prompt, true)) {
			t.Errorf("request %d = %+v", i, r)
		}
	}
}

func TestSampleShareGPTOversamples(t *testing.T) {
	tok := newBPETokenizer()
	path := shareGPTFile(t, 3)
	fixed := 64
	reqs, err := SampleShareGPT(&Env{Tokenizer: tok, Path: path, NumPrompts: 7, Seed: 0, DisableShuffle: true, RequestIDPrefix: "p", Flags: &Flags{ShareGPTFlags: ShareGPTFlags{SharegptOutputLen: &fixed}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 7 {
		t.Fatalf("got %d requests, want 7", len(reqs))
	}
	r := pyrand.NewRandom(0)
	for i := 3; i < 7; i++ {
		src := r.Choice(3)
		if reqs[i].Prompt != reqs[src].Prompt || reqs[i].RequestID != fmt.Sprintf("p%d", i) || reqs[i].ExpectedOutputLen != 64 {
			t.Errorf("oversampled request %d = %+v, want a copy of request %d with id p%d", i, reqs[i], src, i)
		}
	}
	reqs, err = SampleShareGPT(&Env{Tokenizer: tok, Path: path, NumPrompts: 7, NoOversample: true, Flags: &Flags{}})
	if err != nil || len(reqs) != 3 {
		t.Fatalf("--no-oversample gave %d requests, %v; want the 3 available", len(reqs), err)
	}
}

func TestSampleShareGPTValidity(t *testing.T) {
	tok := newBPETokenizer()
	long := strings.Repeat("x", 1100) // 1100 tokens with the test BPE
	b, _ := json.Marshal([]any{
		map[string]any{"conversations": []any{map[string]string{"value": "hi"}, map[string]string{"value": "a long enough answer"}}},
		map[string]any{"conversations": []any{map[string]string{"value": long}, map[string]string{"value": "a long enough answer"}}},
		map[string]any{"conversations": []any{map[string]string{"value": "a valid prompt here"}, map[string]string{"value": "ok"}}},
		map[string]any{"conversations": []any{map[string]string{"value": "a valid prompt here"}, map[string]string{"value": "a long enough answer"}}, "image": "cat.png"},
	})
	path := writeFile(t, "v.json", string(b))
	reqs, err := SampleShareGPT(&Env{Tokenizer: tok, Path: path, NumPrompts: 10, DisableShuffle: true, NoOversample: true, Flags: &Flags{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 1 || reqs[0].RequestID != "0" {
		t.Fatalf("kept %+v, want only the last entry (short prompt, long prompt and short answer dropped)", reqs)
	}
	if len(reqs[0].MultiModal) != 1 || string(reqs[0].MultiModal[0]) != `{"type":"image_url","image_url":{"url":"file://cat.png"}}` {
		t.Errorf("media = %s", reqs[0].MultiModal)
	}
	chat, err := SampleShareGPT(&Env{Tokenizer: tok, Path: path, NumPrompts: 10, DisableShuffle: true, NoOversample: true, EnableMultimodalChat: true, Flags: &Flags{}})
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"role":"user","content":[{"text":"a valid prompt here","type":"text"},{"type":"image_url","image_url":{"url":"file://cat.png"}}]}]`
	if string(chat[0].ChatMessages) != want || chat[0].Prompt != "" {
		t.Errorf("chat messages = %s, want %s", chat[0].ChatMessages, want)
	}
}

func TestOversampleErrors(t *testing.T) {
	_, err := maybeOversample(nil, 3, "", false, 0, pyrand.NewRandom(0))
	var pe *py.Error
	if !errors.As(err, &pe) || pe.Type != "IndexError" {
		t.Errorf("oversampling nothing: error %v, want IndexError", err)
	}
	_, err = maybeOversample([]Request{{RequestID: "a"}, {RequestID: "a"}}, 2, "", false, 0, pyrand.NewRandom(0))
	if err == nil || err.Error() != "Duplicate request_id found in the sampled requests. Please ensure that each request_id is unique." {
		t.Errorf("duplicate ids: error %v", err)
	}
}

func fakeTemplate(p string, kwargs map[string]any) (string, error) {
	extra := ""
	if v, ok := kwargs["enable_thinking"]; ok {
		extra = fmt.Sprintf("<think=%v>", v)
	}
	return "<|user|>" + p + "<|assistant|>" + extra, nil
}

func TestSampleCustom(t *testing.T) {
	tok := newBPETokenizer()
	path := writeFile(t, "c.jsonl", `{"prompt": "first question", "output_tokens": 10}

{"prompt": "second question", "output_tokens": "20"}
{"prompt": "third question", "output_tokens": 30.9}
`)
	tests := []struct {
		name       string
		o          *Env
		tok        Tokenizer
		wantPrompt []string
		wantOut    []int
		wantErr    string
	}{
		{name: "skip template, row lengths", tok: tok, o: &Env{Path: path, SkipChatTemplate: true, DisableShuffle: true, Flags: &Flags{CustomFlags: CustomFlags{CustomOutputLen: -1}}},
			wantPrompt: []string{"first question", "second question", "third question"}, wantOut: []int{10, 20, 30}},
		{name: "template and kwargs", tok: tok, o: &Env{Path: path, NumPrompts: 1, ChatTemplate: fakeTemplate, ChatTemplateKwargs: map[string]any{"enable_thinking": false}, DisableShuffle: true, Flags: &Flags{CustomFlags: CustomFlags{CustomOutputLen: 256}}},
			wantPrompt: []string{"<|user|>first question<|assistant|><think=false>"}, wantOut: []int{256}},
		{name: "no tokenizer", tok: nil, o: &Env{Path: path, NumPrompts: 2, DisableShuffle: true, Flags: &Flags{CustomFlags: CustomFlags{CustomOutputLen: 256}}},
			wantPrompt: []string{"first question", "second question"}, wantOut: []int{1, 1}},
		{name: "oversampled", tok: tok, o: &Env{Path: path, NumPrompts: 4, SkipChatTemplate: true, DisableShuffle: true, Flags: &Flags{CustomFlags: CustomFlags{CustomOutputLen: 5}}},
			wantPrompt: []string{"first question", "second question", "third question", "second question"}, wantOut: []int{5, 5, 5, 5}},
		{name: "no template available", tok: tok, o: &Env{Path: path, Flags: &Flags{CustomFlags: CustomFlags{CustomOutputLen: 5}}}, wantErr: "--skip-chat-template"},
		{name: "not jsonl", tok: tok, o: &Env{Path: "data.json", Flags: &Flags{}}, wantErr: "Only JSONL format is supported for CustomDataset."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Tokenizer = tt.tok
			reqs, err := SampleCustom(tt.o)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to mention %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var prompts []string
			var outs []int
			for _, r := range reqs {
				prompts = append(prompts, r.Prompt)
				outs = append(outs, r.ExpectedOutputLen)
				if tt.tok != nil && r.PromptLen != len(tok.Encode(nil, r.Prompt, true)) {
					t.Errorf("PromptLen %d does not count %q with special tokens", r.PromptLen, r.Prompt)
				}
			}
			if !slices.Equal(prompts, tt.wantPrompt) || !slices.Equal(outs, tt.wantOut) {
				t.Errorf("prompts %q outputs %v, want %q %v", prompts, outs, tt.wantPrompt, tt.wantOut)
			}
		})
	}
}

// TestSampleCustomOutputTokensErrors: Python's message, then the file
// (and line) it is about and what would be accepted.
func TestSampleCustomOutputTokensErrors(t *testing.T) {
	tok := newBPETokenizer()
	for _, tt := range []struct{ content, want, place string }{
		{`{"prompt": "a"}`, "If no output length is provided the custom dataset must contain an 'output_tokens' field.",
			"(No line of %s has one; add \"output_tokens\": N to each line, or pass --custom-output-len N.)"},
		{`{"prompt": "a", "output_tokens": "many"}`, "Invalid value for 'output_tokens' in custom dataset: 'many'. Must be an integer.", "(%s line 1)"},
		{"{\"prompt\": \"a\", \"output_tokens\": 3}\n{\"prompt\": \"b\"}", "Invalid value for 'output_tokens' in custom dataset: 'nan'. Must be an integer.", "(%s line 2)"},
		{`{"text": "a"}`, "JSONL file must contain a 'prompt' column.",
			"(No line of %s has a \"prompt\" field; each line must be an object such as {\"prompt\": \"...\"}.)"},
	} {
		path := writeFile(t, "e.jsonl", tt.content)
		_, err := SampleCustom(&Env{Tokenizer: tok, Path: path, SkipChatTemplate: true, DisableShuffle: true, Flags: &Flags{CustomFlags: CustomFlags{CustomOutputLen: -1}}})
		if want := tt.want + " " + fmt.Sprintf(tt.place, path); err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %q", tt.content, err, want)
		}
	}
}

func TestSamplePrefixRepetition(t *testing.T) {
	tok := newBPETokenizer()
	o := &Env{Tokenizer: tok, NumPrompts: 7, Seed: 5, DisableShuffle: true, Flags: &Flags{PrefixRepetitionFlags: PrefixRepetitionFlags{PrefixRepetitionPrefixLen: 12, PrefixRepetitionSuffixLen: 6, PrefixRepetitionNumPrefixes: 3, PrefixRepetitionOutputLen: 9}}}
	reqs, err := SamplePrefixRepetition(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 7 {
		t.Fatalf("got %d requests, want 7", len(reqs))
	}
	// 7 = 3*2 + 1: prefixes get 3, 2, 2 prompts.
	groups := []int{3, 2, 2}
	at := 0
	for g, size := range groups {
		for k := 0; k < size; k++ {
			r := reqs[at+k]
			if r.RequestID != "" || r.ExpectedOutputLen != 9 {
				t.Errorf("request %d = %+v, want no id and output 9", at+k, r)
			}
			if k > 0 && commonPrefixLen(r.Prompt, reqs[at].Prompt) == 0 {
				t.Errorf("group %d request %d shares no prefix with its group", g, at+k)
			}
		}
		at += size
	}
	// Shuffled with Python's random reseeded with --seed.
	o.DisableShuffle = false
	shuffled, err := SamplePrefixRepetition(o)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(reqs)
	pyrand.NewRandom(5).Shuffle(len(want), func(i, j int) { want[i], want[j] = want[j], want[i] })
	for i := range want {
		if shuffled[i].Prompt != want[i].Prompt {
			t.Fatalf("shuffled request %d differs from random.shuffle's order", i)
		}
	}
	_, err = SamplePrefixRepetition(&Env{Tokenizer: tok, NumPrompts: 2, Flags: &Flags{PrefixRepetitionFlags: PrefixRepetitionFlags{PrefixRepetitionNumPrefixes: 3, PrefixRepetitionPrefixLen: 1, PrefixRepetitionSuffixLen: 1}}})
	if err == nil || err.Error() != "num_requests (2) must be greater than or equal to num_prefixes (3)" {
		t.Errorf("too few prompts: error %v", err)
	}
}

// TestSamplePrefixRepetitionLeavesNumpyState checks that the dataset draws
// its first prefix from numpy.random reseeded with --seed, leaving the
// shared generator advanced for the arrival gaps.
func TestSamplePrefixRepetitionLeavesNumpyState(t *testing.T) {
	tok := newBPETokenizer()
	g, err := NewPythonGlobals(9)
	if err != nil {
		t.Fatal(err)
	}
	g.NumPy.RandomSample() // state before the dataset must not matter
	if _, err := SamplePrefixRepetition(&Env{Tokenizer: tok, NumPrompts: 1, Seed: 9, Globals: g, Flags: &Flags{PrefixRepetitionFlags: PrefixRepetitionFlags{PrefixRepetitionNumPrefixes: 1, PrefixRepetitionPrefixLen: 4, PrefixRepetitionSuffixLen: 4}}}); err != nil {
		t.Fatal(err)
	}
	if g.NumPy.RandomSample() == pyrand.NewRandomState(9).RandomSample() {
		t.Error("the global numpy state was not advanced by the dataset's draws")
	}
}

func commonPrefixLen(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func TestSampleSonnet(t *testing.T) {
	tok := newBPETokenizer()
	var lines []string
	for i := range 40 {
		lines = append(lines, fmt.Sprintf("Line %d of a sonnet that rhymes\n", i))
	}
	o := &Env{Tokenizer: tok, Path: writeFile(t, "sonnet.txt", strings.Join(lines, "")), NumPrompts: 5, ChatTemplate: fakeTemplate, Seed: 0, RequestIDPrefix: "son-", Flags: &Flags{SonnetFlags: SonnetFlags{SonnetInputLen: 400, SonnetOutputLen: 150, SonnetPrefixLen: 200}}}
	reqs, err := SampleSonnet(o)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		if !strings.HasPrefix(r.Prompt, "<|user|>"+sonnetBasePrompt+lines[0]) || r.PromptLen > 400 || r.RequestID != fmt.Sprintf("son-%d", i) || r.ExpectedOutputLen != 150 {
			t.Errorf("request %d = %q (len %d, id %s)", i, r.Prompt, r.PromptLen, r.RequestID)
		}
	}
	o.Backend = chatBackend
	raw, err := SampleSonnet(o)
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := fakeTemplate(raw[0].Prompt, nil); f != reqs[0].Prompt {
		t.Errorf("raw prompt %q does not template to the formatted one", raw[0].Prompt)
	}
	o.Flags.SonnetInputLen = 5
	if _, err := SampleSonnet(o); err == nil || !strings.HasPrefix(err.Error(), "'input_len' must be higher than the base prompt length (") {
		t.Errorf("tiny input len: error %v", err)
	}
}
