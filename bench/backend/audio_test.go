package backend

import (
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"regexp"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/internal/py"
)

const testBoundary = "5c0ffee0a1b2c3d4e5f60718293a4b5c"

// textPart is one text field as aiohttp writes it for a str value; name is
// as it appears in the header, quoted-string escapes included.
func textPart(name, value string) string {
	return "--" + testBoundary + "\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\n" +
		"Content-Disposition: form-data; name=\"" + name + "\"\r\n" +
		"\r\n" + value + "\r\n"
}

// TestBuildAudioRequestBytes pins the whole body for a real two-sample
// clip: the WAV that soundfile.write makes of [0.0, 0.5] at 8 kHz, then
// the payload fields in Python's dict order.
func TestBuildAudioRequestBytes(t *testing.T) {
	audio, err := datasets.NewAudio(datasets.PCM{Samples: []float64{0, 0.5}, Channels: 1, SampleRate: 8000})
	if err != nil {
		t.Fatal(err)
	}
	wav := "RIFF" + "\x28\x00\x00\x00" + "WAVE" +
		"fmt " + "\x10\x00\x00\x00" + "\x01\x00" + "\x01\x00" + "\x40\x1f\x00\x00" + "\x80\x3e\x00\x00" + "\x02\x00" + "\x10\x00" +
		"data" + "\x04\x00\x00\x00" + "\x00\x00" + "\x00\x40"
	req := datasets.Request{Prompt: "not sent", ExpectedOutputLen: 200, RequestID: "a-0"}
	ctype, body, err := BuildAudioRequest(&req, audio, BodyParams{Model: "openai/whisper-large-v3"}, testBoundary)
	if err != nil {
		t.Fatal(err)
	}
	want := "--" + testBoundary + "\r\n" +
		"Content-Type: audio/wav\r\n" +
		"Content-Disposition: form-data; name=\"file\"; filename=\"audio.wav\"\r\n" +
		"\r\n" + wav + "\r\n" +
		textPart("model", "openai/whisper-large-v3") +
		textPart("max_completion_tokens", "200") +
		textPart("stream", "True") +
		textPart("language", "en") +
		textPart("stream_include_usage", "True") +
		textPart("stream_continuous_usage_stats", "True") +
		"--" + testBoundary + "--\r\n"
	if string(body) != want {
		t.Errorf("body\n%q\nwant\n%q", body, want)
	}
	if want := "multipart/form-data; boundary=" + testBoundary; ctype != want {
		t.Errorf("content type %q, want %q", ctype, want)
	}
	checkMultipart(t, ctype, body, []string{"file", "model", "max_completion_tokens", "stream", "language", "stream_include_usage", "stream_continuous_usage_stats"})
	if audio.DurationSec != 2.0/8000 {
		t.Errorf("duration %v, want %v", audio.DurationSec, 2.0/8000)
	}
}

// TestAudioFormFields: str(value) of every payload value, with
// --ignore-eos, --extra-body and request overrides merged as dict.update
// merges them. The expected parts match what aiohttp 3.8.4's FormData
// wrote for the same payload under CPython 3.11.
func TestAudioFormFields(t *testing.T) {
	clip := &datasets.Audio{WAV: []byte("W"), Filename: "audio.wav", ContentType: "audio/wav"}
	req := datasets.Request{ExpectedOutputLen: 7, Overrides: rawJSON(`{"language": "de", "tools": [{"type": "function", "strict": false}]}`)}
	p := BodyParams{Model: "m", ModelName: "lora-1", IgnoreEOS: true, ExtraBody: obj(
		"language", `"fr"`,
		"temperature", "0",
		"top_p", "1e0",
		"big", "1e400",
		"tiny", "-1.5e-7",
		"nan", "NaN",
		"neg", "-Infinity",
		"zero", "-0",
		"stream", "false",
		"seed", "null",
		"prompt", `"it's \"x\"\n"`,
		"stop", `["a", "b's", 3, 2.50]`,
		"logit_bias", `{"50256": -100, "é": {"k": null}}`,
		"a b", `"spaced"`,
		"q\"\\", `"escaped"`,
		"tab\tname", `"t"`,
		"u", `["é\u00a0'\""]`,
		"big_int", "12345678901234567890",
	)}
	_, body, err := BuildAudioRequest(&req, clip, p, testBoundary)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		textPart("model", "lora-1"),
		textPart("max_completion_tokens", "7"),
		textPart("stream", "False"),
		textPart("language", "de"),
		textPart("stream_include_usage", "True"),
		textPart("stream_continuous_usage_stats", "True"),
		textPart("ignore_eos", "True"),
		textPart("temperature", "0"),
		textPart("top_p", "1.0"),
		textPart("big", "inf"),
		textPart("tiny", "-1.5e-07"),
		textPart("nan", "nan"),
		textPart("neg", "-inf"),
		textPart("zero", "0"),
		textPart("seed", "None"),
		textPart("prompt", "it's \"x\"\n"),
		textPart("stop", `['a', "b's", 3, 2.5]`),
		textPart("logit_bias", `{'50256': -100, 'é': {'k': None}}`),
		textPart(`a\ b`, "spaced"),
		textPart(`q\"\\`, "escaped"),
		textPart("tab\\\tname", "t"),
		textPart("u", `['é\xa0\'"']`),
		textPart("big_int", "12345678901234567890"),
		textPart("tools", `[{'type': 'function', 'strict': False}]`),
	}
	_, fields, ok := strings.Cut(string(body), "W\r\n")
	if !ok {
		t.Fatalf("no file part in %q", body)
	}
	if got := strings.Join(want, "") + "--" + testBoundary + "--\r\n"; fields != got {
		t.Errorf("fields\n%s\nwant\n%s", fields, got)
	}
}

// checkMultipart reads body with Go's own multipart reader: the parts
// must come back in order with their names, the file part whole.
func checkMultipart(t *testing.T, ctype string, body []byte, names []string) {
	t.Helper()
	media, params, err := mime.ParseMediaType(ctype)
	if err != nil || media != "multipart/form-data" {
		t.Fatalf("content type %q: %s, %v", ctype, media, err)
	}
	r := multipart.NewReader(strings.NewReader(string(body)), params["boundary"])
	for i := 0; ; i++ {
		part, err := r.NextPart()
		if err == io.EOF {
			if i != len(names) {
				t.Errorf("%d parts, want %d", i, len(names))
			}
			return
		}
		if err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		if i >= len(names) || part.FormName() != names[i] {
			t.Errorf("part %d is %q, want %v", i, part.FormName(), names)
		}
		if _, err := io.ReadAll(part); err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
	}
}

func TestFormDataDisposition(t *testing.T) {
	tests := []struct {
		name, filename string
		hasFilename    bool
		want           string
	}{
		{"file", "audio.wav", true, `form-data; name="file"; filename="audio.wav"`},
		{"file", "my clip (1).wav", true, `form-data; name="file"; filename="my%20clip%20%281%29.wav"`},
		{"file", "süß~_-.wav", true, `form-data; name="file"; filename="s%C3%BC%C3%9F~_-.wav"`},
		{"a b", "", false, `form-data; name="a\ b"`},
		{`q"\`, "", false, `form-data; name="q\"\\"`},
		{"tab\there", "", false, "form-data; name=\"tab\\\there\""},
		{"", "", false, `form-data; name=""`},
	}
	for _, tc := range tests {
		got, err := formDataDisposition(tc.name, tc.filename, tc.hasFilename)
		if err != nil || got != tc.want {
			t.Errorf("formDataDisposition(%q, %q) = %q, %v; want %q", tc.name, tc.filename, got, err, tc.want)
		}
	}
	if _, err := formDataDisposition("größe", "", false); err == nil || !strings.Contains(err.Error(), `form field name "größe": aiohttp cannot send`) {
		t.Errorf("non-ASCII name: error %v", err)
	}
	for _, bad := range [][2]string{{"a\nb", "x.wav"}, {"a", "x\r.wav"}, {"\x7f", "x"}, {"a\x00", "x"}} {
		if _, err := formDataDisposition(bad[0], bad[1], true); !errors.Is(err, errHeaderInjection) {
			t.Errorf("formDataDisposition(%q, %q) error %v, want the header injection error", bad[0], bad[1], err)
		}
	}
}

func TestBuildAudioRequestErrors(t *testing.T) {
	clip := &datasets.Audio{WAV: []byte("W"), Filename: "audio.wav", ContentType: "audio/wav"}
	req := &datasets.Request{RequestID: "r7"}
	tests := []struct {
		name     string
		req      *datasets.Request
		audio    *datasets.Audio
		p        BodyParams
		boundary string
		want     string
	}{
		{"no clip", req, nil, BodyParams{Model: "m"}, testBoundary, "multi_modal_content must be a dict containing 'audio' or 'audio_path'"},
		{"empty boundary", req, clip, BodyParams{Model: "m"}, "", `multipart boundary "": want 1 to 70 characters`},
		{"long boundary", req, clip, BodyParams{Model: "m"}, strings.Repeat("a", 71), `multipart boundary "` + strings.Repeat("a", 71) + `": want 1 to 70 characters`},
		{"boundary with a space", req, clip, BodyParams{Model: "m"}, "a b", `multipart boundary "a b": character ' ' is not a token character`},
		{"no content type", req, &datasets.Audio{WAV: []byte("W"), Filename: "x.wav"}, BodyParams{Model: "m"}, testBoundary, `request "r7": audio clip "x.wav" has no content type`},
		{"control char in content type", req, &datasets.Audio{Filename: "x.wav", ContentType: "audio/wav\r\nX: y"}, BodyParams{Model: "m"}, testBoundary, "Forbidden control character detected in headers. Potential header injection attack."},
		{"control char in a key", req, clip, BodyParams{Model: "m", ExtraBody: obj("a\nb", "1")}, testBoundary, "Forbidden control character detected in headers. Potential header injection attack."},
		{"overrides not an object", &datasets.Request{RequestID: "r8", Overrides: rawJSON(`[1]`)}, clip, BodyParams{Model: "m"}, testBoundary, `request "r8": request overrides must be a JSON object, got [1]`},
		{"extra body not JSON", req, clip, BodyParams{Model: "m", ExtraBody: obj("k", "{")}, testBoundary, `extra body key "k": `},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := BuildAudioRequest(tc.req, tc.audio, tc.p, tc.boundary)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want prefix %q", err, tc.want)
			}
		})
	}
	_, _, err := BuildAudioRequest(req, nil, BodyParams{Model: "m"}, testBoundary)
	var verr *py.Error
	if !errors.As(err, &verr) || verr.Type != "TypeError" {
		t.Errorf("no clip: %#v, want a TypeError", err)
	}
}

func TestNewAudioBoundary(t *testing.T) {
	uuid4 := regexp.MustCompile(`^[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}$`)
	seen := map[string]bool{}
	for range 100 {
		b := NewAudioBoundary()
		if !uuid4.MatchString(b) || checkBoundary(b) != nil {
			t.Fatalf("boundary %q is not a uuid4 hex", b)
		}
		if seen[b] {
			t.Fatalf("boundary %q repeated", b)
		}
		seen[b] = true
	}
}

func BenchmarkBuildAudioRequest(b *testing.B) {
	audio, err := datasets.NewAudio(datasets.PCM{Samples: make([]float64, 16000*5), Channels: 1, SampleRate: 16000})
	if err != nil {
		b.Fatal(err)
	}
	req := datasets.Request{ExpectedOutputLen: 128}
	p := BodyParams{Model: "openai/whisper-large-v3", ExtraBody: obj("temperature", "0.0")}
	b.ReportAllocs()
	b.SetBytes(int64(len(audio.WAV)))
	for b.Loop() {
		if _, _, err := BuildAudioRequest(&req, audio, p, testBoundary); err != nil {
			b.Fatal(err)
		}
	}
}
