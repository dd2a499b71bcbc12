package datasets

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/stampede-bench/stampede/datasets/hfhub"
)

// asrClass is ASRDataset: every clip whose duration lies within
// [--asr-min-audio-len-sec, --asr-max-audio-len-sec] becomes a request
// carrying the clip, with the transcription prompt the model's tokenizer
// wants (Whisper's control tokens for an "openai" tokenizer, Cohere's for
// a "cohere" one, else empty) and 1,024 output tokens by default.
//
// Clips are read as vLLM reads them: decoded arrays ({"array",
// "sampling_rate"}), embedded bytes ({"bytes"}) or a file path. stampede
// decodes WAV (PCM and IEEE float) and FLAC (DecodeFLAC); an MP3 or Ogg
// clip stops the run with its format named.
var asrClass = &hfClass{name: "ASRDataset", multimodal: true, split: "train",
	paths: []string{
		asrLibriSpeech,
		"facebook/voxpopuli",
		"LIUM/tedlium",
		"edinburghcstr/ami",
		"speechcolab/gigaspeech",
		"kensho/spgispeech",
		asrEarnings22Cleaned,
		"D4nt3/esb-datasets-earnings22-validation-tiny-filtered",
	},
	sample: sampleASR,
}

const (
	asrLibriSpeech       = "openslr/librispeech_asr"
	asrEarnings22Cleaned = "ArtificialAnalysis/Earnings22-Cleaned-AA"
)

func sampleASR(h *hfRun) ([]Request, error) {
	out := h.outputLen(1024)
	prompt := ""
	name := h.env.TokenizerName
	switch {
	case strings.Contains(name, "openai"):
		prompt = "<|startoftranscript|><|en|><|transcribe|><|notimestamps|>"
	case strings.Contains(strings.ToLower(name), "cohere"):
		prompt = "<|startofcontext|><|startoftranscript|><|emo:undefined|><|en|><|en|><|pnc|><|noitn|><|notimestamp|><|nodiarize|>"
	}
	promptLen := h.tokens(prompt)
	lo, hi := h.env.Flags.ASRMinAudioLenSec, h.env.Flags.ASRMaxAudioLenSec
	if math.IsNaN(hi) || hi == 0 {
		hi = math.Inf(1) // float(x or inf)
	}
	earnings := h.name == asrEarnings22Cleaned
	var root string
	if earnings {
		var err error
		if root, err = h.snapshotRoot(); err != nil {
			return nil, err
		}
	}
	var reqs []Request
	var durations []float64
	skipped := 0
	err := h.each(func(_ int, row *hfhub.Object) (bool, error) {
		if len(reqs) >= h.env.NumPrompts {
			return true, nil
		}
		f := rowFields{row: row}
		var audio any
		if earnings {
			// This set names repository-local MP3 files in "url".
			audio = filepath.Join(root, filepath.FromSlash(f.str("url")))
		} else {
			audio = f.get("audio")
		}
		if f.err != nil {
			return true, f.err
		}
		clip, err := h.asrClip(audio)
		if err != nil {
			return true, err
		}
		if clip.DurationSec < lo || clip.DurationSec > hi {
			skipped++
			return false, nil
		}
		durations = append(durations, clip.DurationSec)
		reqs = append(reqs, Request{Prompt: prompt, PromptLen: promptLen, ExpectedOutputLen: out, RequestID: h.id(len(reqs)), Audio: clip})
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	if logf := h.env.Logf; logf != nil {
		if skipped > 0 {
			logf("WARNING: %d samples discarded from dataset due to their length being greater than what Whisper supports.", skipped)
		}
		logf("Number of audio samples: %d", len(durations))
		avg, lo, hi, med := durationStats(durations)
		logf("Audio duration statistics (s): avg=%.2f, min=%.2f, max=%.2f, median=%.2f", avg, lo, hi, med)
	}
	return h.oversample(reqs)
}

// durationStats are the mean, min, max and numpy median of d (zeros
// when empty).
func durationStats(d []float64) (avg, lo, hi, med float64) {
	if len(d) == 0 {
		return 0, 0, 0, 0
	}
	s := append([]float64(nil), d...)
	sort.Float64s(s)
	sum := 0.0
	for _, x := range d {
		sum += x
	}
	n := len(s)
	med = s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return sum / float64(n), s[0], s[n-1], med
}

// asrClip turns an audio value into the clip the request uploads.
func (h *hfRun) asrClip(v any) (*Audio, error) {
	switch v := v.(type) {
	case string:
		return h.audioFile(v)
	case *hfhub.Object:
		arr, hasArr := v.Get("array")
		sr, hasSR := v.Get("sampling_rate")
		if hasArr && hasSR && arr != nil {
			pcm, err := arrayPCM(arr, sr)
			if err != nil {
				return nil, fmt.Errorf("dataset hf (ASRDataset): \"audio\": %w", err)
			}
			return NewAudio(pcm)
		}
		if b, ok := v.Get("bytes"); ok && b != nil {
			var data []byte
			switch b := b.(type) {
			case []byte:
				data = b
			case string:
				data = []byte(b)
			}
			pcm, err := decodeClip(data)
			if err != nil {
				return nil, fmt.Errorf("dataset hf (ASRDataset): embedded audio (%s): %w; stampede decodes WAV and FLAC clips", sniffAudio(data), err)
			}
			return NewAudio(pcm)
		}
		if p, ok := v.Get("path"); ok {
			if s, ok := p.(string); ok && s != "" {
				return h.audioFile(s)
			}
		}
	}
	return nil, valueError("ASR samples must provide decoded audio arrays, embedded audio bytes, or a local audio path.")
}

// audioFile is a clip given by path ({"audio_path": path} in vLLM): the
// file is uploaded as it is, its duration read from its header.
func (h *hfRun) audioFile(path string) (*Audio, error) {
	if !filepath.IsAbs(path) && h.src != nil && h.src.Root != "" {
		path = filepath.Join(h.src.Root, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if sniffAudio(data) == "FLAC" {
		pcm, err := DecodeFLAC(data)
		if err != nil {
			return nil, fmt.Errorf("dataset hf (ASRDataset): %s: %w", path, err)
		}
		return NewAudio(pcm)
	}
	pcm, err := DecodeWAV(data)
	if err != nil {
		return nil, fmt.Errorf("dataset hf (ASRDataset): %s (%s): %w; stampede reads WAV and FLAC files", path, sniffAudio(data), err)
	}
	return &Audio{WAV: data, Filename: filepath.Base(path), ContentType: "audio/wav", DurationSec: pcm.DurationSec()}, nil
}

// decodeClip decodes embedded WAV or FLAC bytes, as soundfile.read does.
func decodeClip(data []byte) (PCM, error) {
	if sniffAudio(data) == "FLAC" {
		return DecodeFLAC(data)
	}
	return DecodeWAV(data)
}

// arrayPCM is a decoded Audio feature value: a list of samples (mono) or
// of frames, and the rate.
func arrayPCM(arr, sr any) (PCM, error) {
	rate, ok := sr.(int64)
	if !ok {
		f, isF := sr.(float64)
		if !isF || f != math.Trunc(f) {
			return PCM{}, fmt.Errorf("sampling_rate %s is not an integer", pyStr(sr))
		}
		rate = int64(f)
	}
	if rate < 1 || rate > math.MaxInt32 {
		return PCM{}, fmt.Errorf("sampling_rate %d is out of range", rate)
	}
	list, ok := arr.([]any)
	if !ok {
		return PCM{}, fmt.Errorf("array holds %s, want a list of samples", pyTypeName(arr))
	}
	p := PCM{Channels: 1, SampleRate: int(rate)}
	for i, x := range list {
		switch x := x.(type) {
		case []any:
			if i == 0 {
				p.Channels = len(x)
			}
			if len(x) != p.Channels || p.Channels == 0 {
				return PCM{}, fmt.Errorf("array frame %d has %d channels, want %d", i, len(x), p.Channels)
			}
			for _, s := range x {
				f, ok := number(s)
				if !ok {
					return PCM{}, fmt.Errorf("array frame %d holds %s", i, pyTypeName(s))
				}
				p.Samples = append(p.Samples, f)
			}
		default:
			f, ok := number(x)
			if !ok || p.Channels != 1 {
				return PCM{}, fmt.Errorf("array item %d holds %s, want a number", i, pyTypeName(x))
			}
			p.Samples = append(p.Samples, f)
		}
	}
	return p, nil
}

// sniffAudio names an audio container by its magic bytes, for errors.
func sniffAudio(b []byte) string {
	switch {
	case len(b) >= 4 && string(b[:4]) == "fLaC":
		return "FLAC"
	case len(b) >= 4 && string(b[:4]) == "OggS":
		return "Ogg"
	case len(b) >= 3 && string(b[:3]) == "ID3", len(b) >= 2 && b[0] == 0xFF && b[1]&0xE0 == 0xE0:
		return "MP3"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WAVE":
		return "WAV"
	}
	return "unknown format"
}
