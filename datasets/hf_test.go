package datasets

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/stampede-bench/stampede/datasets/pyrand"
	"github.com/stampede-bench/stampede/internal/py"
)

// writeParquet writes rows with the same library stampede reads with.
func writeParquet[T any](t *testing.T, path string, rows []T) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[T](f)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// hfCache makes an offline hub cache (HF_HUB_CACHE) and returns the
// snapshot directory of repo, where the test puts its files.
func hfCache(t *testing.T, repo string) string {
	t.Helper()
	cache := t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HUB_OFFLINE", "1")
	return hfSnapshot(t, cache, repo)
}

func hfSnapshot(t *testing.T, cache, repo string) string {
	dir := filepath.Join(cache, "datasets--"+strings.ReplaceAll(repo, "/", "--"))
	if err := os.MkdirAll(filepath.Join(dir, "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "refs", "main"), []byte("abc1234"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(dir, "snapshots", "abc1234")
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	return snap
}

func hfTestEnv(path string, n int) *Env {
	f := &Flags{}
	f.ASRMaxAudioLenSec = math.Inf(1)
	f.BlazeditMaxDistance = 1
	return &Env{Tokenizer: newBPETokenizer(), ChatTemplate: fakeTemplate, NumPrompts: n,
		Backend: chatBackend, Path: path, Flags: f, DisableShuffle: true, Globals: PythonGlobals{}.orPrivate(0)}
}

func intp(n int) *int { return &n }

func TestHFUnknownPathListsKnown(t *testing.T) {
	_, err := sampleHF(hfTestEnv("nobody/nothing", 1))
	pe, ok := err.(*py.Error)
	if !ok || pe.Type != "ValueError" || !strings.HasPrefix(pe.Msg, "Unsupported dataset path: nobody/nothing. Huggingface dataset only supports dataset_path from one of following: {") {
		t.Fatalf("error %v", err)
	}
	for _, p := range HFDatasetPaths() {
		if !strings.Contains(pe.Msg, "'"+p+"'") {
			t.Errorf("message does not list %s", p)
		}
	}
}

func TestHFBackendChecks(t *testing.T) {
	env := hfTestEnv("lmarena-ai/VisionArena-Chat", 1)
	env.Backend = vllmBackend
	_, err := sampleHF(env)
	if err == nil || err.Error() != "Multi-modal content is not supported on backend 'vllm'; use one of ['openai-audio', 'openai-chat']." {
		t.Errorf("multimodal on vllm: %v", err)
	}
	env = hfTestEnv("gorilla-llm/Berkeley-Function-Calling-Leaderboard", 1)
	env.Backend = openAIBackend
	if _, err := sampleHF(env); err == nil || !strings.HasPrefix(err.Error(), "BFCL dataset requires the 'openai-chat' backend") {
		t.Errorf("BFCL on openai: %v", err)
	}
	env = hfTestEnv("likaixin/InstructCoder", 1)
	env.Tokenizer = nil
	if _, err := sampleHF(env); err == nil || !strings.Contains(err.Error(), "Tokenizer must be initialized") {
		t.Errorf("no tokenizer: %v", err)
	}
}

type instructRow struct {
	Input       string `parquet:"input"`
	Instruction string `parquet:"instruction"`
	Output      string `parquet:"output"`
}

func TestHFInstructCoder(t *testing.T) {
	snap := hfCache(t, "likaixin/InstructCoder")
	var rows []instructRow
	for _, w := range []string{"alpha", "beta", "gamma", "delta"} {
		rows = append(rows, instructRow{Input: "def " + w + "(): pass", Instruction: "Rename " + w + "."})
	}
	writeParquet(t, filepath.Join(snap, "train.parquet"), rows)
	env := hfTestEnv("likaixin/InstructCoder", 3)
	env.RequestIDPrefix = "r-"
	reqs, err := sampleHF(env)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3 (take(num_prompts))", len(reqs))
	}
	tok := newBPETokenizer()
	for i, r := range reqs {
		want := "<|user|>" + rows[i].Input + "\n\n" + rows[i].Instruction + " Just output the code, do not include any explanation.<|assistant|>"
		if r.Prompt != want || r.ExpectedOutputLen != 200 || r.RequestID != "r-"+string(rune('0'+i)) {
			t.Errorf("request %d = %+v", i, r)
		}
		if r.PromptLen != len(tok.Encode(nil, want, true)) {
			t.Errorf("request %d prompt_len %d", i, r.PromptLen)
		}
	}
	env = hfTestEnv("likaixin/InstructCoder", 6)
	env.SkipChatTemplate = true
	env.Flags.HFOutputLen = intp(7)
	reqs, err = sampleHF(env)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 6 || strings.HasPrefix(reqs[0].Prompt, "<|user|>") || reqs[0].ExpectedOutputLen != 7 || reqs[5].RequestID != "5" {
		t.Errorf("skip template, oversampled: %+v", reqs)
	}
}

type turn struct {
	From  string `parquet:"from"`
	Value string `parquet:"value"`
}

type convRow struct {
	ID            string `parquet:"id"`
	Conversations []turn `parquet:"conversations,list"`
}

func TestHFConversationShuffleAndFilter(t *testing.T) {
	snap := hfCache(t, "Aeala/ShareGPT_Vicuna_unfiltered")
	var rows []convRow
	for i := range 40 {
		r := convRow{ID: string(rune('A' + i))}
		q := strings.Repeat("question about the thing ", 1+i%3) + r.ID
		a := strings.Repeat("an answer to it ", 1+i%4)
		r.Conversations = []turn{{"human", q}, {"gpt", a}}
		if i%5 == 0 {
			r.Conversations = r.Conversations[:1] // filtered out
		}
		rows = append(rows, r)
	}
	writeParquet(t, filepath.Join(snap, "train.parquet"), rows)
	for _, stream := range []bool{true, false} {
		env := hfTestEnv("Aeala/ShareGPT_Vicuna_unfiltered", 10)
		env.DisableShuffle = false
		env.NoStream = !stream
		env.Seed = 5
		env.Flags.HFSplit = "train"
		reqs, err := sampleHF(env)
		if err != nil {
			t.Fatal(err)
		}
		// The shuffle comes first, the filter after it.
		var want []string
		for _, i := range pyrand.NewGenerator(5).Permutation(len(rows)) {
			if len(rows[i].Conversations) >= 2 && len(want) < 10 {
				want = append(want, rows[i].Conversations[0].Value)
			}
		}
		var got []string
		for _, r := range reqs {
			got = append(got, r.Prompt)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("stream=%v prompts\n%q\nwant\n%q", stream, got, want)
		}
	}
	// No split: vLLM passes split=None; stampede asks for one.
	env := hfTestEnv("Aeala/ShareGPT_Vicuna_unfiltered", 1)
	if _, err := sampleHF(env); err == nil || !strings.Contains(err.Error(), "--hf-split") {
		t.Errorf("missing split: %v", err)
	}
}

type gsmRow struct {
	Question string `parquet:"question"`
	Answer   string `parquet:"answer"`
}

func TestHFGSM8KDefaultSubsetAndCard(t *testing.T) {
	snap := hfCache(t, "openai/gsm8k")
	card := "---\nconfigs:\n- config_name: main\n  data_files:\n  - split: train\n    path: main/train-*\n  - split: test\n    path: main/test-*\n- config_name: socratic\n  data_files:\n  - split: test\n    path: socratic/test-*\n---\n"
	_ = os.WriteFile(filepath.Join(snap, "README.md"), []byte(card), 0o644)
	writeParquet(t, filepath.Join(snap, "main", "test-00000-of-00001.parquet"), []gsmRow{{Question: "main q"}})
	writeParquet(t, filepath.Join(snap, "main", "train-00000-of-00001.parquet"), []gsmRow{{Question: "train q"}})
	writeParquet(t, filepath.Join(snap, "socratic", "test-00000-of-00001.parquet"), []gsmRow{{Question: "socratic q"}})
	reqs, err := sampleHF(hfTestEnv("openai/gsm8k", 1))
	if err != nil {
		t.Fatal(err)
	}
	if reqs[0].Prompt != "<|user|>main q<|assistant|>" || reqs[0].ExpectedOutputLen != 256 {
		t.Errorf("default main/test: %+v", reqs[0])
	}
	env := hfTestEnv("openai/gsm8k", 1)
	env.Flags.HFSubset = "socratic"
	if reqs, err = sampleHF(env); err != nil || reqs[0].Prompt != "<|user|>socratic q<|assistant|>" {
		t.Errorf("--hf-subset socratic: %+v %v", reqs, err)
	}
	env = hfTestEnv("openai/gsm8k", 1)
	env.Flags.HFSplit = "validation"
	if _, err = sampleHF(env); err == nil || err.Error() != `Unknown split "validation". Should be one of ['train', 'test'].` {
		t.Errorf("unknown split: %v", err)
	}
}

type mtRow struct {
	Turns []string `parquet:"turns,list"`
}

type humanEvalRow struct {
	Prompt string `parquet:"prompt"`
}

func TestHFMTBenchHumanEval(t *testing.T) {
	snap := hfCache(t, "philschmid/mt-bench")
	writeParquet(t, filepath.Join(snap, "data", "train-00000-of-00001.parquet"), []mtRow{{Turns: []string{"first turn", "second"}}})
	reqs, err := sampleHF(hfTestEnv("philschmid/mt-bench", 1))
	if err != nil || reqs[0].Prompt != "<|user|>first turn<|assistant|>" || reqs[0].ExpectedOutputLen != 256 {
		t.Fatalf("mt-bench: %+v %v", reqs, err)
	}
	snap = hfSnapshot(t, os.Getenv("HF_HUB_CACHE"), "openai/openai_humaneval")
	writeParquet(t, filepath.Join(snap, "openai_humaneval", "test-00000-of-00001.parquet"), []humanEvalRow{{Prompt: "def f():"}})
	reqs, err = sampleHF(hfTestEnv("openai/openai_humaneval", 1))
	if err != nil || reqs[0].Prompt != "<|user|>def f():<|assistant|>" {
		t.Fatalf("humaneval: %+v %v", reqs, err)
	}
}

type hfImage struct {
	Bytes []byte  `parquet:"bytes,optional"`
	Path  *string `parquet:"path,optional"`
}

type arenaMsg struct {
	Role    string `parquet:"role"`
	Content string `parquet:"content"`
}

type arenaRow struct {
	Conversation [][]arenaMsg `parquet:"conversation,list"`
	Images       []hfImage    `parquet:"images,list"`
}

// pngBytes is a w×h PNG of one color, with alpha a.
func pngBytes(t *testing.T, w, h int, c color.NRGBA) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetNRGBA(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// decodeDataURL decodes a data:image/jpeg;base64 URL from a media part.
func decodeDataURL(t *testing.T, part json.RawMessage) image.Image {
	t.Helper()
	var p struct {
		Type     string `json:"type"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(part, &p); err != nil || p.Type != "image_url" {
		t.Fatalf("media part %s", part)
	}
	b64, ok := strings.CutPrefix(p.ImageURL.URL, "data:image/jpeg;base64,")
	if !ok {
		t.Fatalf("url %.40s is not a JPEG data URL", p.ImageURL.URL)
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	img, err := jpeg.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestHFVisionArena(t *testing.T) {
	snap := hfCache(t, "lmarena-ai/VisionArena-Chat")
	// Half-transparent red is flattened onto white: pink.
	img := pngBytes(t, 8, 6, color.NRGBA{255, 0, 0, 128})
	writeParquet(t, filepath.Join(snap, "data", "train-00000-of-00001.parquet"), []arenaRow{
		{Conversation: [][]arenaMsg{{{"user", "what is this?"}, {"assistant", "a square"}}}, Images: []hfImage{{Bytes: img}}},
	})
	env := hfTestEnv("lmarena-ai/VisionArena-Chat", 1)
	env.Flags.HFSubset = "ignored" // VisionArena drops --hf-subset
	reqs, err := sampleHF(env)
	if err != nil {
		t.Fatal(err)
	}
	r := reqs[0]
	if r.Prompt != "what is this?" || r.ExpectedOutputLen != 128 || len(r.MultiModal) != 1 {
		t.Fatalf("request %+v", r)
	}
	got := decodeDataURL(t, r.MultiModal[0])
	if b := got.Bounds(); b.Dx() != 8 || b.Dy() != 6 {
		t.Fatalf("image %v, want 8×6", b)
	}
	cr, cg, cb, _ := got.At(3, 3).RGBA()
	if cr>>8 < 240 || cg>>8 < 110 || cg>>8 > 145 || cb>>8 < 110 || cb>>8 > 145 {
		t.Errorf("pixel (%d,%d,%d), want about (255,127,127)", cr>>8, cg>>8, cb>>8)
	}
	env = hfTestEnv("lmarena-ai/VisionArena-Chat", 1)
	env.EnableMultimodalChat = true
	reqs, err = sampleHF(env)
	if err != nil {
		t.Fatal(err)
	}
	if reqs[0].Prompt != "" || !bytes.HasPrefix(reqs[0].ChatMessages, []byte(`[{"role":"user","content":[{"text":"what is this?","type":"text"},{"type":"image_url"`)) {
		t.Errorf("chat messages %.120s", reqs[0].ChatMessages)
	}
}

type mmstarRow struct {
	Question string  `parquet:"question"`
	Image    hfImage `parquet:"image"`
}

func TestHFMMStar(t *testing.T) {
	snap := hfCache(t, "Lin-Chen/MMStar")
	card := "---\nconfigs:\n- config_name: val\n  data_files:\n  - split: val\n    path: mmstar.parquet\n---\n"
	_ = os.WriteFile(filepath.Join(snap, "README.md"), []byte(card), 0o644)
	img := pngBytes(t, 4, 4, color.NRGBA{0, 0, 255, 255})
	webp := []byte("RIFF\x10\x00\x00\x00WEBPVP8 ")
	writeParquet(t, filepath.Join(snap, "mmstar.parquet"), []mmstarRow{
		{Question: "  Which color?\nOptions: A: red, B: blue", Image: hfImage{Bytes: img}},
		{Question: "Second?", Image: hfImage{Bytes: webp}},
	})
	reqs, err := sampleHF(hfTestEnv("Lin-Chen/MMStar", 1))
	if err != nil {
		t.Fatal(err)
	}
	if reqs[0].Prompt != "Which color?" || reqs[0].RequestID != "0" {
		t.Errorf("request %+v", reqs[0])
	}
	decodeDataURL(t, reqs[0].MultiModal[0])
	if _, err := sampleHF(hfTestEnv("Lin-Chen/MMStar", 2)); err == nil || !strings.Contains(err.Error(), "WebP") {
		t.Errorf("WebP image: %v", err)
	}
}

type blazeditRow struct {
	Code          string  `parquet:"code"`
	ChangeRequest string  `parquet:"change_request"`
	NormDistance  float64 `parquet:"norm_distance"`
}

func TestHFBlazedit(t *testing.T) {
	snap := hfCache(t, "vdaita/edit_5k_char")
	writeParquet(t, filepath.Join(snap, "train.parquet"), []blazeditRow{
		{"a = 1", "make it 2", 0.1}, {"b = 1", "make it 3", 0.5}, {"c = 1", "make it 4", 0.3},
	})
	env := hfTestEnv("vdaita/edit_5k_char", 2)
	env.SkipChatTemplate = true
	env.Flags.BlazeditMinDistance = 0.2
	reqs, err := sampleHF(env)
	if err != nil {
		t.Fatal(err)
	}
	want := "Given a code file, please apply the change requests and generate the new file.\n\nOriginal file:\n```python\nb = 1\n```\n\nChange request:\nmake it 3\n\nPlease generate the new code file in the \"New file\" section below."
	if len(reqs) != 2 || reqs[0].Prompt != want || reqs[0].RequestID != "1" || reqs[1].RequestID != "2" || reqs[0].ExpectedOutputLen != 4000 {
		t.Fatalf("requests %+v", reqs)
	}
	// Blazedit matches --dataset-path only.
	env = hfTestEnv("/some/local/copy", 1)
	env.Flags.HFName = "vdaita/edit_5k_char"
	if _, err := sampleHF(env); err == nil || !strings.HasPrefix(err.Error(), "Unsupported dataset path") {
		t.Errorf("--hf-name blazedit: %v", err)
	}
}

type aimoRow struct {
	Problem  string `parquet:"problem"`
	Solution string `parquet:"solution"`
}

func TestHFAIMOValidity(t *testing.T) {
	snap := hfCache(t, "AI-MO/aimo-validation-aime")
	tok := newBPETokenizer()
	long := "the" // over 1024 tokens, under 2048: past sharegpt's limit, within AIMO's
	for len(tok.Encode(nil, long, true)) <= 1100 {
		long += " the"
	}
	writeParquet(t, filepath.Join(snap, "train.parquet"), []aimoRow{
		{"ab", "a long enough solution"}, // prompt under 4 tokens: dropped
		{long, "the solution is forty two"},
		{"what is six times seven", "42"}, // completion under 4 tokens: dropped
	})
	reqs, err := sampleHF(hfTestEnv("AI-MO/aimo-validation-aime", 1))
	if err != nil {
		t.Fatal(err)
	}
	if reqs[0].Prompt != long || reqs[0].ExpectedOutputLen != len(tok.Encode(nil, "the solution is forty two", true)) || reqs[0].RequestID != "0" {
		t.Errorf("request %+v", reqs[0])
	}
}

type zetaRow struct {
	Events string `parquet:"events"`
	Input  string `parquet:"input"`
	Output string `parquet:"output"`
}

func TestHFNextEdit(t *testing.T) {
	snap := hfCache(t, "zed-industries/zeta")
	writeParquet(t, filepath.Join(snap, "train.jsonl.parquet"), []zetaRow{
		{"edit 1", "fn main() {}", "preamble <|editable_region_start|>fn main() { run() }"},
		{"edit 2", "x", "no marker!"},
	})
	env := hfTestEnv("zed-industries/zeta", 2)
	env.Flags.HFOutputLen = intp(99) // not read by this class
	reqs, err := sampleHF(env)
	if err != nil {
		t.Fatal(err)
	}
	tok := newBPETokenizer()
	if !strings.Contains(reqs[0].Prompt, "### User Edits:\n\nedit 1\n\n### User Excerpt:\n\nfn main() {}\n\n### Response:\n\n") {
		t.Errorf("prompt %q", reqs[0].Prompt)
	}
	if reqs[0].ExpectedOutputLen != len(tok.Encode(nil, "<|editable_region_start|>fn main() { run() }", true)) {
		t.Errorf("output len %d", reqs[0].ExpectedOutputLen)
	}
	if reqs[1].ExpectedOutputLen != len(tok.Encode(nil, "!", true)) {
		t.Errorf("missing marker: output len %d, want the last character's", reqs[1].ExpectedOutputLen)
	}
}

type mlperfRow struct {
	SystemPrompt string `parquet:"system_prompt"`
	Question     string `parquet:"question"`
	Output       string `parquet:"output"`
}

func TestHFMLPerf(t *testing.T) {
	snap := hfCache(t, "mgoin/mlperf-inference-llama2-data")
	writeParquet(t, filepath.Join(snap, "data", "train-00000-of-00001.parquet"), []mlperfRow{{"be brief", "why is the sky blue", "because of scattering"}})
	env := hfTestEnv("mgoin/mlperf-inference-llama2-data", 1)
	var seen string
	env.ChatRender = func(messages, tools []byte) (string, error) {
		seen = string(messages)
		return "<sys>be brief<user>why is the sky blue<gen>", nil
	}
	reqs, err := sampleHF(env)
	if err != nil {
		t.Fatal(err)
	}
	if seen != `[{"role":"system","content":"be brief"},{"role":"user","content":"why is the sky blue"}]` {
		t.Errorf("messages %s", seen)
	}
	tok := newBPETokenizer()
	if reqs[0].Prompt != "<sys>be brief<user>why is the sky blue<gen>" || reqs[0].ExpectedOutputLen != len(tok.Encode(nil, "because of scattering", false)) {
		t.Errorf("request %+v", reqs[0])
	}
}

func TestHFBFCL(t *testing.T) {
	snap := hfCache(t, "gorilla-llm/Berkeley-Function-Calling-Leaderboard")
	simple := `{"id": "s0", "question": [[{"role": "user", "content": "weather in Paris?"}]], "function": [{"name": "get_weather", "parameters": {"type": "dict", "properties": {"t": {"type": "float"}, "c": {"type": "tuple", "items": {"type": "any"}}}}}]}
{"id": "s1", "question": [], "function": [{"name": "f"}]}
{"id": "s2", "question": [[{"role": "user", "content": "second"}]], "function": {"name": "single", "parameters": {"type": "dict"}}}
`
	multiple := `{"id": "m0", "question": [[{"role": "system", "content": "sys"}, {"role": "user", "content": "pick"}]], "function": [{"name": "a"}, {"name": "b"}]}
`
	_ = os.WriteFile(filepath.Join(snap, "BFCL_v3_simple.json"), []byte(simple), 0o644)
	_ = os.WriteFile(filepath.Join(snap, "BFCL_v3_multiple.json"), []byte(multiple), 0o644)
	env := hfTestEnv("gorilla-llm/Berkeley-Function-Calling-Leaderboard", 3)
	env.Flags.BFCLCategories = CommaList{"simple", "multiple"}
	var toolsSeen []string
	env.ChatRender = func(messages, tools []byte) (string, error) {
		toolsSeen = append(toolsSeen, string(tools))
		return string(messages), nil
	}
	reqs, err := sampleHF(env)
	if err != nil {
		t.Fatal(err)
	}
	// Round-robin: s0, m0, s1 (skipped: no question), s2.
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	if string(reqs[0].ChatMessages) != `[{"role":"user","content":"weather in Paris?"}]` || string(reqs[1].ChatMessages) != `[{"role":"system","content":"sys"},{"role":"user","content":"pick"}]` {
		t.Errorf("messages %s / %s", reqs[0].ChatMessages, reqs[1].ChatMessages)
	}
	wantTools := `{"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"t":{"type":"number"},"c":{"type":"array","items":{"type":"string"}}}}}}],"tool_choice":"auto"}`
	if string(reqs[0].Overrides) != wantTools {
		t.Errorf("overrides\n%s\nwant\n%s", reqs[0].Overrides, wantTools)
	}
	if string(reqs[2].Overrides) != `{"tools":[{"type":"function","function":{"name":"single","parameters":{"type":"object"}}}],"tool_choice":"auto"}` {
		t.Errorf("single function overrides %s", reqs[2].Overrides)
	}
	if reqs[2].RequestID != "2" || reqs[0].ExpectedOutputLen != 512 || len(toolsSeen) != 3 {
		t.Errorf("ids/out/renders: %+v, %d renders", reqs[2], len(toolsSeen))
	}
	tok := newBPETokenizer()
	if reqs[0].PromptLen != len(tok.Encode(nil, string(reqs[0].ChatMessages), true)) {
		t.Errorf("prompt_len %d is not the rendered length", reqs[0].PromptLen)
	}
	// Shuffled: Python's random.Random(seed).shuffle of the interleaving.
	env = hfTestEnv("gorilla-llm/Berkeley-Function-Calling-Leaderboard", 2)
	env.Flags.BFCLCategories = CommaList{"simple", "multiple"}
	env.DisableShuffle = false
	env.Seed = 1
	reqs, err = sampleHF(env)
	if err != nil {
		t.Fatal(err)
	}
	order := []string{"s0", "m0", "s1", "s2"}
	pyrand.NewRandom(1).Shuffle(4, func(i, j int) { order[i], order[j] = order[j], order[i] })
	contents := map[string]string{"s0": "weather in Paris?", "m0": "pick", "s2": "second"}
	var want []string
	for _, id := range order {
		if c, ok := contents[id]; ok && len(want) < 2 {
			want = append(want, c)
		}
	}
	for i, r := range reqs {
		if !strings.Contains(string(r.ChatMessages), want[i]) {
			t.Errorf("shuffled request %d %s, want %q", i, r.ChatMessages, want[i])
		}
	}
	env = hfTestEnv(snap, 1) // a local copy
	env.Flags.HFName = "gorilla-llm/Berkeley-Function-Calling-Leaderboard"
	env.Flags.BFCLCategories = CommaList{"nope"}
	if _, err := sampleHF(env); err == nil || !strings.HasPrefix(err.Error(), "BFCL category 'nope' not found: file 'BFCL_v3_nope.json' does not exist") {
		t.Errorf("missing category: %v", err)
	}
}

type asrAudio struct {
	Bytes []byte  `parquet:"bytes,optional"`
	Path  *string `parquet:"path,optional"`
}

type asrRow struct {
	Audio asrAudio `parquet:"audio"`
	Text  string   `parquet:"text"`
}

func TestHFASR(t *testing.T) {
	snap := hfCache(t, "openslr/librispeech_asr")
	card := "---\nconfigs:\n- config_name: clean\n  data_files:\n  - split: train.100\n    path: clean/train.100-*\n  - split: test\n    path: clean/test-*\n---\n"
	_ = os.WriteFile(filepath.Join(snap, "README.md"), []byte(card), 0o644)
	clip := func(seconds float64) []byte {
		n := int(seconds * 100)
		b, err := EncodeWAV(PCM{Samples: make([]float64, n), Channels: 1, SampleRate: 100})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	writeParquet(t, filepath.Join(snap, "clean", "train.100-00000-of-00001.parquet"), []asrRow{
		{Audio: asrAudio{Bytes: clip(2)}, Text: "two"},
		{Audio: asrAudio{Bytes: clip(40)}, Text: "long"},
		{Audio: asrAudio{Bytes: clip(1)}, Text: "one"},
	})
	env := hfTestEnv("openslr/librispeech_asr", 2)
	env.Backend = audioBackend
	env.TokenizerName = "openai/whisper-large-v3"
	env.Flags.HFSubset = "clean"
	env.Flags.HFSplit = "train.100"
	env.Flags.ASRMaxAudioLenSec = 30
	var logs []string
	env.Logf = func(f string, a ...any) { logs = append(logs, f) }
	reqs, err := sampleHF(env)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 2 || reqs[0].Audio == nil || reqs[0].Audio.DurationSec != 2 || reqs[1].Audio.DurationSec != 1 {
		t.Fatalf("requests %+v", reqs)
	}
	if reqs[0].Prompt != "<|startoftranscript|><|en|><|transcribe|><|notimestamps|>" || reqs[0].ExpectedOutputLen != 1024 || reqs[1].RequestID != "1" {
		t.Errorf("request %+v", reqs[0])
	}
	if len(logs) == 0 || !strings.Contains(logs[0], "discarded") {
		t.Errorf("logs %q", logs)
	}
	// FLAC clips (LibriSpeech's) decode; MP3 is named, not misread.
	flac, err := os.ReadFile(filepath.Join("testdata", "flac", "mono16-lpc.flac"))
	if err != nil {
		t.Fatal(err)
	}
	writeParquet(t, filepath.Join(snap, "clean", "train.100-00000-of-00001.parquet"), []asrRow{{Audio: asrAudio{Bytes: flac}}})
	env.NumPrompts = 1
	reqs, err = sampleHF(env)
	if err != nil {
		t.Fatal(err)
	}
	if want := 5000.0 / 16000; reqs[0].Audio.DurationSec != want {
		t.Errorf("FLAC clip duration %v, want %v", reqs[0].Audio.DurationSec, want)
	}
	writeParquet(t, filepath.Join(snap, "clean", "train.100-00000-of-00001.parquet"), []asrRow{{Audio: asrAudio{Bytes: []byte("ID3\x04\x00\x00")}}})
	if _, err := sampleHF(env); err == nil || !strings.Contains(err.Error(), "MP3") {
		t.Errorf("MP3 clip: %v", err)
	}
}

type mmvuRow struct {
	Question string     `parquet:"question"`
	Choices  mmvuChoice `parquet:"choices"`
	Video    string     `parquet:"video"`
}

type mmvuChoice struct {
	A string `parquet:"A"`
	C string `parquet:"C"`
	B string `parquet:"B"`
}

func TestHFMMVULocalCopy(t *testing.T) {
	dir := t.TempDir()
	writeParquet(t, filepath.Join(dir, "validation.parquet"), []mmvuRow{{
		Question: "What happens?",
		Choices:  mmvuChoice{A: "falls", C: "flies", B: "rolls"},
		Video:    "https://huggingface.co/datasets/yale-nlp/MMVU/resolve/main/videos/1.mp4",
	}})
	env := hfTestEnv(dir, 1)
	env.Backend = vllmBackend // MMVU does not set IS_MULTIMODAL
	env.Flags.HFName = "yale-nlp/MMVU"
	reqs, err := sampleHF(env)
	if err != nil {
		t.Fatal(err)
	}
	if reqs[0].Prompt != "What happens? A.falls C.flies B.rolls" {
		t.Errorf("prompt %q (choices in file order)", reqs[0].Prompt)
	}
	want := `{"type":"video_url","video_url":{"url":"file://` + dir + `/videos/1.mp4"}}`
	if len(reqs[0].MultiModal) != 1 || string(reqs[0].MultiModal[0]) != want {
		t.Errorf("media %s, want %s", reqs[0].MultiModal, want)
	}
}

func TestHFDownloadFromEndpoint(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "x.parquet")
	writeParquet(t, file, []humanEvalRow{{Prompt: "downloaded prompt"}})
	body, _ := os.ReadFile(file)
	const sha = "00ff00ff"
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = append(auth, r.Header.Get("Authorization"))
		switch r.URL.Path {
		case "/api/datasets/openai/openai_humaneval/revision/main":
			_, _ = w.Write([]byte(`{"sha": "` + sha + `"}`))
		case "/api/datasets/openai/openai_humaneval/tree/" + sha:
			_, _ = w.Write([]byte(`[{"type": "file", "path": "openai_humaneval/test-00000-of-00001.parquet"}, {"type": "file", "path": ".gitattributes"}]`))
		case "/datasets/openai/openai_humaneval/resolve/" + sha + "/openai_humaneval/test-00000-of-00001.parquet":
			_, _ = w.Write(body)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	cache := t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("HF_ENDPOINT", srv.URL)
	t.Setenv("HF_TOKEN", "secret")
	reqs, err := sampleHF(hfTestEnv("openai/openai_humaneval", 1))
	if err != nil {
		t.Fatal(err)
	}
	if reqs[0].Prompt != "<|user|>downloaded prompt<|assistant|>" {
		t.Errorf("prompt %q", reqs[0].Prompt)
	}
	for _, a := range auth {
		if a != "Bearer secret" {
			t.Errorf("request without the token: %q", a)
		}
	}
	if _, err := os.Stat(filepath.Join(cache, "datasets--openai--openai_humaneval", "snapshots", sha, "openai_humaneval", "test-00000-of-00001.parquet")); err != nil {
		t.Errorf("not in the cache layout: %v", err)
	}
	// Offline, the cached copy is used; a dataset not cached is refused.
	t.Setenv("HF_HUB_OFFLINE", "1")
	srv.Close()
	if _, err := sampleHF(hfTestEnv("openai/openai_humaneval", 1)); err != nil {
		t.Errorf("offline from cache: %v", err)
	}
	if _, err := sampleHF(hfTestEnv("philschmid/mt-bench", 1)); err == nil || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
		t.Errorf("offline miss: %v", err)
	}
}

type textRow struct {
	Text  string `parquet:"text"`
	Other string `parquet:"other"`
}

// --hf-text-column reads any hub dataset: that column's text is the
// prompt, sent as it is; empty cells are skipped; a column no row has is
// an error naming the flag.
func TestHFTextColumn(t *testing.T) {
	snap := hfCache(t, "someone/any-corpus")
	rows := []textRow{{"first prompt", "x"}, {"", "y"}, {"third prompt", "z"}}
	writeParquet(t, filepath.Join(snap, "data", "train-00000-of-00001.parquet"), rows)
	env := hfTestEnv("someone/any-corpus", 2)
	env.HFTextColumn = "text"
	reqs, err := sampleHF(env)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 2 || reqs[0].Prompt != "first prompt" || reqs[1].Prompt != "third prompt" || reqs[1].RequestID != "1" ||
		reqs[0].ExpectedOutputLen != columnDefaultOutputLen || reqs[0].PromptLen != len(newBPETokenizer().Encode(nil, "first prompt", true)) {
		t.Errorf("requests %+v", reqs)
	}
	// Oversampled past the two prompts, the ids stay unique.
	env = hfTestEnv("someone/any-corpus", 4)
	env.HFTextColumn = "text"
	if reqs, err = sampleHF(env); err != nil || len(reqs) != 4 || reqs[3].RequestID != "3" {
		t.Errorf("oversampled: %+v %v", reqs, err)
	}
	env = hfTestEnv("someone/any-corpus", 1)
	env.HFTextColumn, env.Flags.HFOutputLen = "other", intp(9)
	if reqs, err = sampleHF(env); err != nil || reqs[0].Prompt != "x" || reqs[0].ExpectedOutputLen != 9 {
		t.Errorf("other column: %+v %v", reqs, err)
	}
	env = hfTestEnv("someone/any-corpus", 1)
	env.HFTextColumn = "prompt"
	if _, err = sampleHF(env); err == nil || !strings.Contains(err.Error(), "--hf-text-column prompt") {
		t.Errorf("missing column: %v", err)
	}
}
