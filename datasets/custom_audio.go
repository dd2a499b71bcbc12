package datasets

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/datasets/pyrand"
	"github.com/stampede-bench/stampede/internal/py"
)

// Audio is one request's clip for the openai-audio backend: Python's
// multi_modal_data {"audio": (samples, sr)}, already turned into the file
// the request function uploads (async_request_openai_audio's to_bytes).
type Audio struct {
	// WAV is the uploaded file's bytes.
	WAV []byte
	// Filename and ContentType go in the file part's headers:
	// "audio.wav" and "audio/wav" for in-memory samples.
	Filename    string
	ContentType string
	// DurationSec is input_audio_duration, soundfile.info(file).duration:
	// frames / samplerate. Its sum over successful requests divided by the
	// run's duration is RTFx.
	DurationSec float64
}

// NewAudio encodes samples the way the openai-audio request function does:
// soundfile.write(buffer, y, sr, format="WAV") into a file named
// "audio.wav" of type "audio/wav".
func NewAudio(p PCM) (*Audio, error) {
	wav, err := EncodeWAV(p)
	if err != nil {
		return nil, err
	}
	return &Audio{WAV: wav, Filename: "audio.wav", ContentType: "audio/wav", DurationSec: p.DurationSec()}, nil
}

// CustomAudioOptions are the `custom_audio` dataset's inputs.
type CustomAudioOptions struct {
	// Path is --dataset-path: a .jsonl file whose lines hold "prompt" and
	// "audio" (a WAV file path, or {"array": [...], "sampling_rate": n}).
	Path       string
	NumPrompts int // --num-prompts; <= 0 takes every row
	// OutputLen is --custom-output-len; -1 takes each row's
	// "output_tokens" (256 without a tokenizer).
	OutputLen int
	// EnableMultimodalChat is --enable-multimodal-chat: the clip becomes an
	// input_audio content part for openai-chat instead of samples for
	// openai-audio.
	EnableMultimodalChat bool
	// SkipChatTemplate is --skip-chat-template. Without it, and without
	// --enable-multimodal-chat, a tokenizer that has a chat template
	// (TokenizerHasChatTemplate) templates the prompt with ChatTemplate
	// (no --chat-template-kwargs, as in Python). SampleCustomAudio fails,
	// naming the flag, when the template is needed and ChatTemplate is nil.
	SkipChatTemplate         bool
	TokenizerHasChatTemplate bool
	ChatTemplate             ChatTemplate
	Seed                     int64 // --seed
	DisableShuffle           bool  // --disable-shuffle
	NoOversample             bool  // --no-oversample
	RequestIDPrefix          string
	Globals                  PythonGlobals
}

// SampleCustomAudio is CustomAudioDataset: the rows of a JSONL file with a
// "prompt" column, shuffled after reseeding Python's random with Seed
// (unless DisableShuffle), the first NumPrompts of them (all when <= 0)
// made into requests with ids RequestIDPrefix + row position, oversampled
// when too few.
//
// With a tokenizer each row's "audio" is read (soundfile.read, see wav.go):
//   - EnableMultimodalChat: the clip, written back as a 16-bit WAV and
//     base64-encoded, is the request's one MultiModal part
//     {"type":"input_audio","input_audio":{"data":...,"format":"wav"}};
//     the prompt stays plain text for openai-chat to wrap.
//   - otherwise (openai-audio): the clip is returned in audio[i] for
//     reqs[i], and the prompt is chat-templated when the tokenizer has a
//     template and SkipChatTemplate is off. openai-audio does not send the
//     prompt; it only counts towards the input tokens.
//
// PromptLen is the prompt's token count with special tokens (1 for a row
// whose prompt is not a string). ExpectedOutputLen is OutputLen, or the
// row's output_tokens when OutputLen is -1.
//
// Without a tokenizer (tok == nil) Python reads no audio at all: PromptLen
// is 1, ExpectedOutputLen is OutputLen (256 for -1), and the requests carry
// no clip, which the openai-audio backend then refuses as Python does.
//
// audio is parallel to the returned requests and nil where a request has no
// clip; oversampled copies share their original's *Audio.
func SampleCustomAudio(tok Tokenizer, o CustomAudioOptions) (reqs []Request, audio []*Audio, err error) {
	if o.Path == "" {
		return nil, nil, valueError("dataset_path must be provided for loading data.")
	}
	if !strings.HasSuffix(o.Path, ".jsonl") {
		return nil, nil, &PythonError{Type: "NotImplementedError", Msg: "Only JSONL format is supported for CustomDataset."}
	}
	template := tok != nil && !o.EnableMultimodalChat && !o.SkipChatTemplate && o.TokenizerHasChatTemplate
	if template && o.ChatTemplate == nil {
		return nil, nil, fmt.Errorf("dataset custom_audio: the tokenizer has a chat template, which stampede cannot render; pass --skip-chat-template to count the prompts as they are")
	}
	rows, columns, err := readJSONL(o.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("dataset custom_audio: %w", err)
	}
	if !columns["prompt"] {
		return nil, nil, valueError("JSONL file must contain a 'prompt' column.")
	}
	g := o.Globals.orPrivate(o.Seed)
	g.Random.Seed(o.Seed)
	if !o.DisableShuffle {
		g.Random.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	}
	n := o.NumPrompts
	if n <= 0 {
		n = len(rows)
	}
	for i, row := range rows {
		if len(reqs) >= n {
			break
		}
		r, clip, err := customAudioRequest(tok, o, row, template, columns)
		if err != nil {
			return nil, nil, err
		}
		r.RequestID = o.RequestIDPrefix + strconv.Itoa(i)
		reqs = append(reqs, r)
		audio = append(audio, clip)
	}
	have := len(reqs)
	if reqs, err = maybeOversample(reqs, n, o.RequestIDPrefix, o.NoOversample, o.Seed, g.Random); err != nil {
		return nil, nil, err
	}
	// maybeOversample drew its copies with random.choice after reseeding;
	// replaying the same draws on a private generator says which clip each
	// copy carries without touching the shared one.
	if extra := len(reqs) - have; extra > 0 {
		replay := pyrand.NewRandom(o.Seed)
		for range extra {
			audio = append(audio, audio[replay.Choice(have)])
		}
	}
	return reqs, audio, nil
}

// customAudioRequest is one row of CustomAudioDataset.sample; template says
// whether the prompt goes through o.ChatTemplate.
func customAudioRequest(tok Tokenizer, o CustomAudioOptions, row customRow, template bool, columns map[string]bool) (Request, *Audio, error) {
	r := Request{PromptLen: 1}
	prompt, isString := "", false
	if raw, ok := row.fields["prompt"]; ok {
		isString = len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &prompt) == nil
	}
	if tok == nil {
		r.Prompt, r.ExpectedOutputLen = prompt, o.OutputLen
		if o.OutputLen == -1 {
			r.ExpectedOutputLen = 256
		}
		return r, nil, nil
	}
	if !columns["audio"] {
		return Request{}, nil, &PythonError{Type: "KeyError", Msg: "'audio'"}
	}
	pcm, err := rowAudio(o.Path, row)
	if err != nil {
		return Request{}, nil, err
	}
	var clip *Audio
	if o.EnableMultimodalChat {
		wav, err := EncodeWAV(pcm)
		if err != nil {
			return Request{}, nil, fmt.Errorf("dataset custom_audio %s line %d: %w", o.Path, row.line, err)
		}
		r.MultiModal = []json.RawMessage{inputAudioPart(wav)}
	} else {
		if clip, err = NewAudio(pcm); err != nil {
			return Request{}, nil, fmt.Errorf("dataset custom_audio %s line %d: %w", o.Path, row.line, err)
		}
		if template && isString {
			if prompt, err = o.ChatTemplate(prompt, nil); err != nil {
				return Request{}, nil, fmt.Errorf("dataset custom_audio %s line %d: chat template: %w", o.Path, row.line, err)
			}
		}
	}
	r.Prompt = prompt
	if isString {
		r.PromptLen = len(tok.Encode(nil, prompt, true))
	}
	r.ExpectedOutputLen = o.OutputLen
	if o.OutputLen == -1 {
		if !columns["output_tokens"] {
			return Request{}, nil, valueError("If no output length is provided the custom dataset must contain an 'output_tokens' field.")
		}
		if r.ExpectedOutputLen, err = pyIntField(row.fields["output_tokens"]); err != nil {
			return Request{}, nil, err
		}
	}
	return r, clip, nil
}

// rowAudio is process_audio(item["audio"]): a string is a file path read
// with soundfile, a dict with "array" and "sampling_rate" is Hugging Face's
// decoded audio; anything else is Python's ValueError.
func rowAudio(path string, row customRow) (PCM, error) {
	raw := row.fields["audio"]
	var file string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &file) == nil {
		p, err := ReadWAVFile(file)
		if err != nil {
			return PCM{}, fmt.Errorf("dataset custom_audio %s line %d: %w", path, row.line, err)
		}
		return p, nil
	}
	var hf struct {
		Array        json.RawMessage `json:"array"`
		SamplingRate json.RawMessage `json:"sampling_rate"`
	}
	if len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &hf) == nil && hf.Array != nil && hf.SamplingRate != nil {
		p, err := hfAudio(hf.Array, hf.SamplingRate)
		if err != nil {
			return PCM{}, fmt.Errorf("dataset custom_audio %s line %d: \"audio\": %w", path, row.line, err)
		}
		return p, nil
	}
	return PCM{}, valueError(fmt.Sprintf("Invalid audio input %s. Must be a file path string, a dict with 'array' and 'sampling_rate', or a (array, sr) tuple.", pyStrOfCell(raw)))
}

// hfAudio turns {"array": samples, "sampling_rate": sr} into PCM: a list of
// numbers is mono, a list of equally long lists is one frame per inner
// list. soundfile.write takes float arrays only, so a list of integers
// alone (numpy int64) is refused as soundfile refuses it.
func hfAudio(array, rate json.RawMessage) (PCM, error) {
	var sr float64
	if err := json.Unmarshal(rate, &sr); err != nil || sr != math.Trunc(sr) || sr < 1 || sr > math.MaxInt32 {
		return PCM{}, fmt.Errorf("sampling_rate %s: want a positive whole number of samples per second", rate)
	}
	var frames []json.RawMessage
	if err := json.Unmarshal(array, &frames); err != nil {
		return PCM{}, fmt.Errorf("array: want a list of samples: %w", err)
	}
	p := PCM{Channels: 1, SampleRate: int(sr)}
	anyFloat := false
	sample := func(v json.RawMessage) (float64, error) {
		var x float64
		if err := json.Unmarshal(v, &x); err != nil {
			return 0, fmt.Errorf("array: sample %s is not a number", v)
		}
		anyFloat = anyFloat || bytes.ContainsAny(v, ".eE")
		return x, nil
	}
	for i, fr := range frames {
		if len(fr) > 0 && fr[0] == '[' {
			var chans []json.RawMessage
			if err := json.Unmarshal(fr, &chans); err != nil {
				return PCM{}, fmt.Errorf("array: frame %d: %w", i, err)
			}
			if i == 0 {
				p.Channels = len(chans)
			}
			if len(chans) != p.Channels || p.Channels == 0 {
				return PCM{}, fmt.Errorf("array: frame %d has %d channels, frame 0 has %d", i, len(chans), p.Channels)
			}
			for _, c := range chans {
				x, err := sample(c)
				if err != nil {
					return PCM{}, err
				}
				p.Samples = append(p.Samples, x)
			}
			continue
		}
		if p.Channels != 1 {
			return PCM{}, fmt.Errorf("array: frame %d is a single sample, frame 0 has %d channels", i, p.Channels)
		}
		x, err := sample(fr)
		if err != nil {
			return PCM{}, err
		}
		p.Samples = append(p.Samples, x)
	}
	if !anyFloat && len(p.Samples) > 0 {
		return PCM{}, fmt.Errorf("array holds only integers (numpy int64), which soundfile cannot write: dtype must be one of ['float32', 'float64', 'int16', 'int32'] and not 'int64'")
	}
	return p, nil
}

// inputAudioPart is the OpenAI content part for a base64 WAV clip.
func inputAudioPart(wav []byte) json.RawMessage {
	var b bytes.Buffer
	b.Grow(base64.StdEncoding.EncodedLen(len(wav)) + 64)
	b.WriteString(`{"type":"input_audio","input_audio":{"data":"`)
	enc := base64.NewEncoder(base64.StdEncoding, &b)
	_, _ = enc.Write(wav) // writes to a bytes.Buffer do not fail
	_ = enc.Close()
	b.WriteString(`","format":"wav"}}`)
	return b.Bytes()
}

// pyStrOfCell is str() of a pandas cell for messages: a missing or null
// cell is nan, strings print as themselves, other values as Python's repr
// of what json.loads makes of them ({'array': [0.5]}).
func pyStrOfCell(raw json.RawMessage) string {
	if raw == nil || string(raw) == "null" {
		return "nan"
	}
	n, err := py.Loads(string(raw))
	if err != nil {
		return string(raw)
	}
	return n.PyStr()
}

var customAudioDataset = &Dataset{
	Name: "custom_audio",
	Sample: func(env *Env) ([]Request, error) {
		reqs, clips, err := SampleCustomAudio(env.Tokenizer, CustomAudioOptions{
			Path: env.Path, NumPrompts: env.NumPrompts, OutputLen: env.Flags.CustomOutputLen,
			EnableMultimodalChat: env.EnableMultimodalChat, SkipChatTemplate: env.SkipChatTemplate,
			TokenizerHasChatTemplate: env.ChatTemplate != nil, ChatTemplate: env.ChatTemplate,
			Seed: env.Seed, DisableShuffle: env.DisableShuffle, NoOversample: env.NoOversample,
			RequestIDPrefix: env.RequestIDPrefix, Globals: env.Globals,
		})
		for i := range reqs {
			if i < len(clips) {
				reqs[i].Audio = clips[i]
			}
		}
		return reqs, err
	},
}
