package datasets

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// testdata/custom_audio/audio.jsonl names its WAV files relative to the
// package directory, where go test runs; Python opens them relative to its
// working directory the same way.
var customAudioPath = filepath.Join("testdata", "custom_audio", "audio.jsonl")

func goldenWAV(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "custom_audio", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The row order after random.seed(0); random.shuffle over 4 rows is
// [2, 0, 1, 3], and oversampling two more after random.seed(0) picks
// positions [3, 3] (see TestSampleCustomImage).
func TestSampleCustomAudio(t *testing.T) {
	tok := newBPETokenizer()
	reqs, err := SampleCustomAudio(&Env{Tokenizer: tok, Path: customAudioPath, NumPrompts: 6, RequestIDPrefix: "ca", Flags: &Flags{CustomFlags: CustomFlags{CustomOutputLen: 64}}})
	audio := takeClips(reqs)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 6 || len(audio) != 6 {
		t.Fatalf("%d requests and %d clips, want 6 and 6", len(reqs), len(audio))
	}
	prompts := []string{"Inline samples.", "Transcribe the audio.", "What is said?", "Stereo samples.", "Stereo samples.", "Stereo samples."}
	for i, r := range reqs {
		want := Request{Prompt: prompts[i], PromptLen: len(tok.Encode(nil, prompts[i], true)), ExpectedOutputLen: 64, RequestID: "ca" + string(rune('0'+i))}
		if !reflect.DeepEqual(r, want) {
			t.Errorf("request %d: %+v, want %+v", i, r, want)
		}
		if audio[i] == nil || audio[i].Filename != "audio.wav" || audio[i].ContentType != "audio/wav" {
			t.Fatalf("request %d: clip %+v, want audio.wav of audio/wav", i, audio[i])
		}
	}
	inline, err := EncodeWAV(PCM{Samples: []float64{0, 0.5, -0.5, 1}, Channels: 1, SampleRate: 4})
	if err != nil {
		t.Fatal(err)
	}
	stereo, err := EncodeWAV(PCM{Samples: []float64{0.25, -0.25, 0.5, -0.5}, Channels: 2, SampleRate: 2})
	if err != nil {
		t.Fatal(err)
	}
	u8, err := DecodeWAV(goldenWAV(t, "tone_stereo_u8.wav"))
	if err != nil {
		t.Fatal(err)
	}
	u8as16, err := EncodeWAV(u8)
	if err != nil {
		t.Fatal(err)
	}
	clips := []struct {
		wav      []byte
		duration float64
	}{
		{inline, 1},
		{goldenWAV(t, "tone_mono_16k.wav"), 0.01},
		{u8as16, 0.005},
		{stereo, 1},
	}
	for i, c := range clips {
		if string(audio[i].WAV) != string(c.wav) || audio[i].DurationSec != c.duration {
			t.Errorf("clip %d: %d bytes, %v s; want %d bytes, %v s", i, len(audio[i].WAV), audio[i].DurationSec, len(c.wav), c.duration)
		}
	}
	if audio[4] != audio[3] || audio[5] != audio[3] {
		t.Error("oversampled copies do not carry their original's clip")
	}
}

func TestSampleCustomAudioMultimodalChat(t *testing.T) {
	tok := newBPETokenizer()
	template := func(p string, _ map[string]any) (string, error) { return "<user>" + p, nil }
	reqs, err := SampleCustomAudio(&Env{Tokenizer: tok, Path: customAudioPath, NumPrompts: 2, DisableShuffle: true, EnableMultimodalChat: true, ChatTemplate: template, Flags: &Flags{CustomFlags: CustomFlags{CustomOutputLen: -1}}})
	audio := takeClips(reqs)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 2 || audio[0] != nil || audio[1] != nil {
		t.Fatalf("got %d requests, clips %v; want 2 requests and no clips", len(reqs), audio)
	}
	part := `{"type":"input_audio","input_audio":{"data":"` + base64.StdEncoding.EncodeToString(goldenWAV(t, "tone_mono_16k.wav")) + `","format":"wav"}}`
	r := reqs[0]
	if r.Prompt != "Transcribe the audio." || len(r.MultiModal) != 1 || string(r.MultiModal[0]) != part || r.ExpectedOutputLen != 10 || r.ChatMessages != nil {
		t.Errorf("request 0: %+v", r)
	}
	if reqs[1].ExpectedOutputLen != 20 || reqs[1].RequestID != "1" {
		t.Errorf("request 1: %+v", reqs[1])
	}
}

func TestSampleCustomAudioChatTemplate(t *testing.T) {
	tok := newBPETokenizer()
	template := func(p string, kwargs map[string]any) (string, error) {
		if kwargs != nil {
			t.Errorf("template kwargs %v, want none", kwargs)
		}
		return "<user>" + p + "<assistant>", nil
	}
	o := &Env{Path: customAudioPath, NumPrompts: 1, DisableShuffle: true, ChatTemplate: template, Flags: &Flags{CustomFlags: CustomFlags{CustomOutputLen: 5}}}
	o.Tokenizer = tok
	reqs, err := SampleCustomAudio(o)
	if err != nil {
		t.Fatal(err)
	}
	if want := "<user>Transcribe the audio.<assistant>"; reqs[0].Prompt != want || reqs[0].PromptLen != len(tok.Encode(nil, want, true)) {
		t.Errorf("templated request %+v, want prompt %q", reqs[0], want)
	}

	o.SkipChatTemplate = true
	if reqs, err = SampleCustomAudio(o); err != nil || reqs[0].Prompt != "Transcribe the audio." {
		t.Errorf("--skip-chat-template: %+v, %v", reqs, err)
	}

	// A tokenizer without a template (ChatTemplate nil) leaves the prompt as
	// it is, as Python does when the tokenizer has no chat_template.
	o.SkipChatTemplate, o.ChatTemplate = false, nil
	if reqs, err = SampleCustomAudio(o); err != nil || reqs[0].Prompt != "Transcribe the audio." {
		t.Errorf("no template: %+v, %v", reqs, err)
	}
}

// Without a tokenizer Python reads no audio: the files need not exist.
func TestSampleCustomAudioNoTokenizer(t *testing.T) {
	path := writeFile(t, "a.jsonl", `{"prompt": "p", "audio": "/nonexistent.wav"}`+"\n")
	reqs, err := SampleCustomAudio(&Env{Path: path, NumPrompts: 1, Flags: &Flags{CustomFlags: CustomFlags{CustomOutputLen: -1}}})
	audio := takeClips(reqs)
	if err != nil {
		t.Fatal(err)
	}
	want := []Request{{Prompt: "p", PromptLen: 1, ExpectedOutputLen: 256, RequestID: "0"}}
	if !reflect.DeepEqual(reqs, want) || len(audio) != 1 || audio[0] != nil {
		t.Errorf("got %+v %v, want %+v and no clip", reqs, audio, want)
	}
	reqs, err = SampleCustomAudio(&Env{Path: path, NumPrompts: 1, Flags: &Flags{CustomFlags: CustomFlags{CustomOutputLen: 7}}})
	if err != nil || reqs[0].ExpectedOutputLen != 7 {
		t.Errorf("--custom-output-len 7: %+v, %v", reqs, err)
	}
}

func TestSampleCustomAudioErrors(t *testing.T) {
	flac := writeFile(t, "clip.flac", "fLaC\x00\x00\x00\x22 and more")
	cases := []struct {
		name, file, content, want string
		python                    bool
	}{
		{"not jsonl", "d.json", "{}", "Only JSONL format is supported for CustomDataset.", true},
		{"no prompt column", "d.jsonl", `{"audio": "a.wav"}`, "JSONL file must contain a 'prompt' column.", true},
		{"no audio column", "d.jsonl", `{"prompt": "p"}`, "'audio'", true},
		{"audio a number", "d.jsonl", `{"prompt": "p", "audio": 5}`, "Invalid audio input 5. Must be a file path string, a dict with 'array' and 'sampling_rate', or a (array, sr) tuple.", true},
		{"audio missing in a row", "d.jsonl", `{"prompt": "p"}` + "\n" + `{"prompt": "q", "audio": "a.wav"}`, "Invalid audio input nan. Must be a file path string, a dict with 'array' and 'sampling_rate', or a (array, sr) tuple.", true},
		{"dict without rate", "d.jsonl", `{"prompt": "p", "audio": {"array": [0.5, 1e3, true, null], "x": "it's"}}`, `Invalid audio input {'array': [0.5, 1000.0, True, None], 'x': "it's"}. Must be a file path string, a dict with 'array' and 'sampling_rate', or a (array, sr) tuple.`, true},
		{"audio a list", "d.jsonl", `{"prompt": "p", "audio": [1, "a"]}`, "Invalid audio input [1, 'a']. Must be a file path string, a dict with 'array' and 'sampling_rate', or a (array, sr) tuple.", true},
		{"not WAV", "d.jsonl", `{"prompt": "p", "audio": "` + flac + `"}`, "line 1: audio file " + flac + ": not a WAV file (it is FLAC); stampede reads WAV files", false},
		{"missing file", "d.jsonl", `{"prompt": "p", "audio": "/nonexistent/a.wav"}`, "line 1: audio file: open /nonexistent/a.wav: no such file or directory", false},
		{"integer samples", "d.jsonl", `{"prompt": "p", "audio": {"array": [0, 1], "sampling_rate": 8000}}`, "dtype must be one of ['float32', 'float64', 'int16', 'int32'] and not 'int64'", false},
		{"ragged frames", "d.jsonl", `{"prompt": "p", "audio": {"array": [[0.5, 0.5], [0.5]], "sampling_rate": 8000}}`, "array: frame 1 has 1 channels, frame 0 has 2", false},
		{"bad rate", "d.jsonl", `{"prompt": "p", "audio": {"array": [0.5], "sampling_rate": 0.5}}`, "sampling_rate 0.5: want a positive whole number", false},
		{"no output_tokens", "d.jsonl", `{"prompt": "p", "audio": {"array": [0.5], "sampling_rate": 8}}`, "If no output length is provided the custom dataset must contain an 'output_tokens' field.", true},
	}
	tok := newBPETokenizer()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := SampleCustomAudio(&Env{Tokenizer: tok, Path: writeFile(t, c.file, c.content+"\n"), DisableShuffle: true, Flags: &Flags{CustomFlags: CustomFlags{CustomOutputLen: -1}}})
			checkDatasetError(t, err, c.want, c.python)
		})
	}
	_, err := SampleCustomAudio(&Env{Tokenizer: tok, Flags: &Flags{}})
	checkDatasetError(t, err, "dataset_path must be provided for loading data.", true)
}

// takeClips moves each request's clip out into a slice parallel to reqs,
// so the requests compare without it.
func takeClips(reqs []Request) []*Audio {
	clips := make([]*Audio, len(reqs))
	for i := range reqs {
		clips[i], reqs[i].Audio = reqs[i].Audio, nil
	}
	return clips
}
