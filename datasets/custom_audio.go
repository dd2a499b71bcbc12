package datasets

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

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

// SampleCustomAudio is CustomAudioDataset: the rows of a JSONL file with a
// "prompt" column, shuffled after reseeding Python's random with --seed
// (unless --disable-shuffle), the first --num-prompts of them (all when
// <= 0) made into requests with ids --request-id-prefix + row position,
// oversampled when too few.
//
// With a tokenizer each row's "audio" is read (soundfile.read, see wav.go):
//   - --enable-multimodal-chat: the clip, written back as a 16-bit WAV and
//     base64-encoded, is the request's one MultiModal part
//     {"type":"input_audio","input_audio":{"data":...,"format":"wav"}};
//     the prompt stays plain text for openai-chat to wrap.
//   - otherwise (openai-audio): the clip is the request's Audio, and the
//     prompt is chat-templated (no --chat-template-kwargs, as in Python)
//     when the tokenizer has a template and --skip-chat-template is off.
//     openai-audio does not send the prompt; it only counts towards the
//     input tokens.
//
// PromptLen is the prompt's token count with special tokens (1 for a row
// whose prompt is not a string). ExpectedOutputLen is --custom-output-len,
// or the row's output_tokens when it is -1.
//
// Without a tokenizer (--skip-tokenizer-init) Python reads no audio at
// all: PromptLen is 1, ExpectedOutputLen is --custom-output-len (256 for
// -1), and the requests carry no clip, which the openai-audio backend
// then refuses as Python does.
//
// Oversampled copies share their original's *Audio.
func SampleCustomAudio(env *Env) ([]Request, error) {
	tok := env.Tokenizer
	if env.Path == "" {
		return nil, valueError("dataset_path must be provided for loading data.")
	}
	if !strings.HasSuffix(env.Path, ".jsonl") {
		return nil, &py.Error{Type: "NotImplementedError", Msg: "Only JSONL format is supported for CustomDataset."}
	}
	template := tok != nil && !env.EnableMultimodalChat && !env.SkipChatTemplate && env.ChatTemplate != nil
	rows, columns, err := readJSONL(env.Path)
	if err != nil {
		return nil, fmt.Errorf("dataset custom_audio: %w", err)
	}
	if !columns["prompt"] {
		return nil, valueError("JSONL file must contain a 'prompt' column.")
	}
	g := env.Globals.orPrivate(env.Seed)
	g.Random.Seed(env.Seed)
	if !env.DisableShuffle {
		g.Random.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	}
	n := env.NumPrompts
	if n <= 0 {
		n = len(rows)
	}
	var reqs []Request
	for i, row := range rows {
		if len(reqs) >= n {
			break
		}
		r, err := customAudioRequest(env, row, template, columns)
		if err != nil {
			return nil, err
		}
		r.RequestID = env.RequestIDPrefix + strconv.Itoa(i)
		reqs = append(reqs, r)
	}
	return maybeOversample(reqs, n, env.RequestIDPrefix, env.NoOversample, env.Seed, g.Random)
}

// customAudioRequest is one row of CustomAudioDataset.sample; template says
// whether the prompt goes through env.ChatTemplate.
func customAudioRequest(env *Env, row customRow, template bool, columns map[string]bool) (Request, error) {
	tok, outputLen := env.Tokenizer, env.Flags.CustomOutputLen
	r := Request{PromptLen: 1}
	prompt, isString := "", false
	if raw, ok := row.fields["prompt"]; ok {
		isString = len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &prompt) == nil
	}
	if tok == nil {
		r.Prompt, r.ExpectedOutputLen = prompt, outputLen
		if outputLen == -1 {
			r.ExpectedOutputLen = 256
		}
		return r, nil
	}
	if !columns["audio"] {
		return Request{}, &py.Error{Type: "KeyError", Msg: "'audio'"}
	}
	pcm, err := rowAudio(env.Path, row)
	if err != nil {
		return Request{}, err
	}
	if env.EnableMultimodalChat {
		wav, err := EncodeWAV(pcm)
		if err != nil {
			return Request{}, fmt.Errorf("dataset custom_audio %s line %d: %w", env.Path, row.line, err)
		}
		r.MultiModal = []json.RawMessage{inputAudioPart(wav)}
	} else {
		if r.Audio, err = NewAudio(pcm); err != nil {
			return Request{}, fmt.Errorf("dataset custom_audio %s line %d: %w", env.Path, row.line, err)
		}
		if template && isString {
			if prompt, err = env.ChatTemplate(prompt, nil); err != nil {
				return Request{}, fmt.Errorf("dataset custom_audio %s line %d: chat template: %w", env.Path, row.line, err)
			}
		}
	}
	r.Prompt = prompt
	if isString {
		r.PromptLen = len(tok.Encode(nil, prompt, true))
	}
	r.ExpectedOutputLen = outputLen
	if outputLen == -1 {
		if !columns["output_tokens"] {
			return Request{}, valueError("If no output length is provided the custom dataset must contain an 'output_tokens' field.")
		}
		if r.ExpectedOutputLen, err = pyIntField(row.fields["output_tokens"]); err != nil {
			return Request{}, err
		}
	}
	return r, nil
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

var customAudioDataset = &Dataset{Name: "custom_audio", Stream: sampled(SampleCustomAudio)}
