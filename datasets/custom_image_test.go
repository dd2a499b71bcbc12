package datasets

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The row order after random.seed(0); random.shuffle(range(4)) is
// [2, 0, 1, 3] (CPython 3.11), and oversampling two more after
// random.seed(0) picks [3, 3].
func TestSampleCustomImage(t *testing.T) {
	tok := newBPETokenizer()
	path := filepath.Join("testdata", "custom_image", "images.jsonl")
	reqs, err := SampleCustomImage(&Env{Tokenizer: tok, Path: path, NumPrompts: 6, RequestIDPrefix: "ci", Flags: &Flags{CustomFlags: CustomFlags{CustomOutputLen: 64}}})
	if err != nil {
		t.Fatal(err)
	}
	type view struct {
		prompt, chat string
		media        []string
		promptLen    int
		id           string
	}
	var got []view
	for _, r := range reqs {
		v := view{prompt: r.Prompt, chat: string(r.ChatMessages), promptLen: r.PromptLen, id: r.RequestID}
		for _, m := range r.MultiModal {
			v.media = append(v.media, string(m))
		}
		if r.ExpectedOutputLen != 64 {
			t.Errorf("%s: output len %d", r.RequestID, r.ExpectedOutputLen)
		}
		got = append(got, v)
	}
	compare := `[{"role":"user","content":[{"type":"text","text":"Compare "},{"type":"image_url","image_url":{"url":"file://x.png"}},` +
		`{"type":"text","text":" and "},{"type":"image_url","image_url":{"url":"file://y.png","detail":"low"}}]}]`
	dataURL := `[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]`
	tokens := func(s string) int { return len(tok.Encode(nil, s, true)) }
	want := []view{
		{chat: compare, promptLen: tokens("Compare  and "), id: "ci0"},
		{prompt: "How many red blocks?", media: []string{
			`{"type":"image_url","image_url":{"url":"file://imgs/a.png"}}`,
			`{"type":"image_url","image_url":{"url":"https://example.com/b.jpg"}}`,
		}, promptLen: tokens("How many red blocks?"), id: "ci1"},
		{prompt: "Describe it.", media: []string{`{"type":"image_url","image_url":{"url":"file:///data/c.png"}}`}, promptLen: tokens("Describe it."), id: "ci2"},
		{chat: dataURL, promptLen: tokens(""), id: "ci3"},
		{chat: dataURL, promptLen: tokens(""), id: "ci4"},
		{chat: dataURL, promptLen: tokens(""), id: "ci5"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}

	// In file order, as chat messages, without a tokenizer.
	reqs, err = SampleCustomImage(&Env{Path: path, NumPrompts: 1, DisableShuffle: true, EnableMultimodalChat: true, Flags: &Flags{}})
	if err != nil {
		t.Fatal(err)
	}
	wantChat := `[{"role":"user","content":[{"text":"How many red blocks?","type":"text"},` +
		`{"type":"image_url","image_url":{"url":"file://imgs/a.png"}},{"type":"image_url","image_url":{"url":"https://example.com/b.jpg"}}]}]`
	if len(reqs) != 1 || string(reqs[0].ChatMessages) != wantChat || reqs[0].Prompt != "" || reqs[0].MultiModal != nil || reqs[0].PromptLen != 1 {
		t.Errorf("chat: %+v", reqs)
	}
	var msgs []map[string]any
	if err := json.Unmarshal(reqs[0].ChatMessages, &msgs); err != nil {
		t.Fatal(err)
	}
}

func TestSampleCustomImageErrors(t *testing.T) {
	cases := []struct {
		name, file, content, want string
		python                    bool
	}{
		{"not jsonl", "d.json", "{}", "Only JSONL format is supported for CustomImageDataset.", true},
		{"bad JSON", "d.jsonl", "{\"prompt\": \n", "Invalid JSON in custom image dataset line 1: the JSON ends early (an unclosed bracket, brace or string?); want a JSON object", true},
		{"not an object", "d.jsonl", "\n[1]\n", "Each custom image dataset line must contain a JSON object. Found <class 'list'> on line 2.", true},
		{"no fields", "d.jsonl", `{"prompt": "x"}`, "Each custom image dataset line must contain either 'prompt' and 'image_files' fields, or a 'content' field. Invalid line: 1.", true},
		{"prompt not a string", "d.jsonl", `{"prompt": 3, "image_files": ["a"]}`, "'prompt' must be a string.", true},
		{"empty files", "d.jsonl", `{"prompt": "x", "image_files": []}`, "'image_files' must be a non-empty list.", true},
		{"file not a string", "d.jsonl", `{"prompt": "x", "image_files": [7]}`, "Invalid image input 7. Must be a PIL.Image.Image, str (URL, file path, or base64 data URL), or dictionary with raw image bytes.", true},
		{"content not a list", "d.jsonl", `{"content": "x"}`, "'content' must be a list of text and image content dictionaries.", true},
		{"content empty", "d.jsonl", `{"content": []}`, "'content' must contain at least one item.", true},
		{"part not a dict", "d.jsonl", `{"content": [1.5]}`, "Each item in 'content' must be a dictionary. Found <class 'float'>.", true},
		{"text not a string", "d.jsonl", `{"content": [{"type": "text", "text": 1}]}`, "Text content parts must contain a string 'text'.", true},
		{"image without image", "d.jsonl", `{"content": [{"type": "image"}]}`, "Image content parts must contain an 'image' field.", true},
		{"image_url url", "d.jsonl", `{"content": [{"type": "image_url", "image_url": {"detail": "x"}}]}`, "Image URL content parts must contain a string 'image_url.url'.", true},
		{"image_url missing", "d.jsonl", `{"content": [{"type": "image_url"}]}`, "Image URL content parts must contain an 'image_url' string or dictionary.", true},
		{"unknown type", "d.jsonl", `{"content": [{"type": "audio"}]}`, "Content parts must have type 'text', 'image', or 'image_url'. Found: 'audio'.", true},
		{"no type", "d.jsonl", `{"content": [{"text": "x"}]}`, "Content parts must have type 'text', 'image', or 'image_url'. Found: None.", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := SampleCustomImage(&Env{Path: writeFile(t, c.file, c.content+"\n"), Flags: &Flags{}})
			checkDatasetError(t, err, c.want, c.python)
		})
	}
	_, err := SampleCustomImage(&Env{Path: "x.jsonl", Flags: &Flags{CustomFlags: CustomFlags{CustomEnsureClientSideData: true}}})
	if err == nil || !strings.Contains(err.Error(), "--custom-ensure-client-side-data") {
		t.Errorf("client-side data: %v", err)
	}
}
