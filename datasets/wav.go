package datasets

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
)

// WAV reading and writing as `vllm bench serve` does it through
// python-soundfile (libsndfile 1.2.2, the build its wheels ship):
//
//   - soundfile.read(path) returns float64 samples, one column per channel.
//     Channels are kept as they are: nothing mixes them down to mono and
//     nothing resamples (that would be librosa.load, which vLLM does not
//     call for these datasets). Integer samples are scaled into [-1, 1):
//     8-bit (unsigned) (u-128)/128, 16-bit s/32768, 24-bit s/2^23, 32-bit
//     s/2^31; float samples are taken as stored.
//   - soundfile.write(buf, y, sr, format="WAV") writes the default subtype,
//     PCM_16, in the canonical 44-byte RIFF layout ("fmt " of 16 bytes,
//     then "data"), keeping y's channel count.
//
// So a 16-bit, 8-bit or float file in [-1, 1) that is read and written again
// comes back with the same 16-bit samples it was made from.

// PCM is decoded audio: what soundfile.read returns, frames interleaved.
type PCM struct {
	// Samples holds Channels values per frame, frame after frame.
	Samples    []float64
	Channels   int
	SampleRate int
}

// Frames is the number of sample frames.
func (p PCM) Frames() int {
	if p.Channels <= 0 {
		return 0
	}
	return len(p.Samples) / p.Channels
}

// DurationSec is soundfile.info(...).duration: frames / samplerate.
func (p PCM) DurationSec() float64 {
	if p.SampleRate <= 0 {
		return 0
	}
	return float64(p.Frames()) / float64(p.SampleRate)
}

// WAV format tags (the fmt chunk's first field).
const (
	wavFormatPCM        = 0x0001
	wavFormatIEEEFloat  = 0x0003
	wavFormatExtensible = 0xFFFE
)

// wavHeaderLen is the size of the header EncodeWAV writes.
const wavHeaderLen = 44

// maxWAVChannels bounds the channel count a file may declare; libsndfile
// refuses more than 1024.
const maxWAVChannels = 1024

// wavAccepted says what DecodeWAV reads, for error messages.
const wavAccepted = "stampede reads WAV files (RIFF/WAVE) holding PCM 8/16/24/32-bit or IEEE float 32/64-bit samples"

// ReadWAVFile is soundfile.read(path) for WAV files. Files in other
// containers (FLAC, Ogg, MP3, AIFF, ...) are refused with an error naming
// the file and what is accepted, rather than decoded differently.
func ReadWAVFile(path string) (PCM, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return PCM{}, fmt.Errorf("audio file: %w", err)
	}
	p, err := DecodeWAV(b)
	if err != nil {
		return PCM{}, fmt.Errorf("audio file %s: %w", path, err)
	}
	return p, nil
}

// DecodeWAV parses a RIFF/WAVE file. Chunks other than "fmt " and "data"
// are skipped (odd-sized chunks carry a pad byte). A data chunk whose
// declared size runs past the end of b (a file written by a streaming
// recorder that never patched its header) is taken to end where b ends, as
// libsndfile does; a trailing partial frame is dropped.
func DecodeWAV(b []byte) (PCM, error) {
	if len(b) < 12 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		if what := describeContainer(b); what != "" {
			return PCM{}, fmt.Errorf("not a WAV file (%s); %s", what, wavAccepted)
		}
		return PCM{}, fmt.Errorf("not a WAV file: %d bytes is shorter than a RIFF header; %s", len(b), wavAccepted)
	}
	var (
		f       wavFormat
		haveFmt bool
	)
	for off := 12; off+8 <= len(b); {
		id := string(b[off : off+4])
		size := int64(binary.LittleEndian.Uint32(b[off+4:]))
		body := int64(off + 8)
		end := body + size
		switch id {
		case "fmt ":
			if end > int64(len(b)) {
				return PCM{}, fmt.Errorf("malformed WAV file: fmt chunk of %d bytes runs past the end of the file", size)
			}
			var err error
			if f, err = parseWAVFormat(b[body:end]); err != nil {
				return PCM{}, err
			}
			haveFmt = true
		case "data":
			if !haveFmt {
				return PCM{}, fmt.Errorf("malformed WAV file: data chunk before the fmt chunk")
			}
			if end > int64(len(b)) {
				end = int64(len(b))
			}
			return f.decode(b[body:end]), nil
		}
		end += size & 1
		if end > int64(len(b)) {
			break
		}
		off = int(end)
	}
	if !haveFmt {
		return PCM{}, fmt.Errorf("malformed WAV file: no fmt chunk")
	}
	return PCM{}, fmt.Errorf("malformed WAV file: no data chunk")
}

// describeContainer names the container that b starts with, for the error
// when it is not RIFF/WAVE; "" when b is too short to tell.
func describeContainer(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("fLaC")):
		return "it is FLAC"
	case bytes.HasPrefix(b, []byte("OggS")):
		return "it is Ogg"
	case bytes.HasPrefix(b, []byte("ID3")) || len(b) >= 2 && b[0] == 0xFF && b[1]&0xE0 == 0xE0:
		return "it is MP3"
	case bytes.HasPrefix(b, []byte("FORM")):
		return "it is AIFF"
	case bytes.HasPrefix(b, []byte("RIFX")):
		return "it is big-endian RIFX"
	case bytes.HasPrefix(b, []byte("RF64")):
		return "it is RF64"
	case len(b) >= 8 && string(b[4:8]) == "ftyp":
		return "it is MP4/M4A"
	case len(b) < 12 && bytes.HasPrefix(b, []byte("RIFF")) || len(b) < 4:
		return ""
	case bytes.HasPrefix(b, []byte("RIFF")):
		return fmt.Sprintf("a RIFF file of form %q, not WAVE", b[8:12])
	}
	return fmt.Sprintf("it starts with %q", b[:4])
}

// wavFormat is the part of the fmt chunk decoding needs.
type wavFormat struct {
	float      bool
	bytesWidth int // bytes per sample
	channels   int
	sampleRate int
}

// parseWAVFormat reads a fmt chunk: WAVE_FORMAT_PCM, WAVE_FORMAT_IEEE_FLOAT
// or WAVE_FORMAT_EXTENSIBLE with one of those as its sub-format.
func parseWAVFormat(c []byte) (wavFormat, error) {
	if len(c) < 16 {
		return wavFormat{}, fmt.Errorf("malformed WAV file: fmt chunk of %d bytes, want at least 16", len(c))
	}
	tag := binary.LittleEndian.Uint16(c[0:])
	f := wavFormat{
		channels:   int(binary.LittleEndian.Uint16(c[2:])),
		sampleRate: int(binary.LittleEndian.Uint32(c[4:])),
	}
	bits := int(binary.LittleEndian.Uint16(c[14:]))
	if tag == wavFormatExtensible {
		// WAVEFORMATEXTENSIBLE: cbSize(2) validBits(2) channelMask(4)
		// then a GUID whose first two bytes are the real format tag.
		if len(c) < 26 {
			return wavFormat{}, fmt.Errorf("malformed WAV file: WAVE_FORMAT_EXTENSIBLE fmt chunk of %d bytes, want at least 26", len(c))
		}
		tag = binary.LittleEndian.Uint16(c[24:])
	}
	switch tag {
	case wavFormatPCM:
		if bits < 1 || bits > 32 {
			return wavFormat{}, fmt.Errorf("WAV PCM with %d bits per sample is not supported; %s", bits, wavAccepted)
		}
	case wavFormatIEEEFloat:
		if bits != 32 && bits != 64 {
			return wavFormat{}, fmt.Errorf("WAV IEEE float with %d bits per sample is not supported; %s", bits, wavAccepted)
		}
		f.float = true
	default:
		return wavFormat{}, fmt.Errorf("WAV format tag 0x%04X (%s) is not supported; %s", tag, wavFormatName(tag), wavAccepted)
	}
	// libsndfile reads a sample of n bits from its ceil(n/8)-byte
	// container, e.g. 12-bit audio as PCM_16.
	f.bytesWidth = (bits + 7) / 8
	if f.channels < 1 || f.channels > maxWAVChannels {
		return wavFormat{}, fmt.Errorf("malformed WAV file: %d channels, want 1 to %d", f.channels, maxWAVChannels)
	}
	if f.sampleRate < 1 {
		return wavFormat{}, fmt.Errorf("malformed WAV file: sample rate %d", f.sampleRate)
	}
	return f, nil
}

// wavFormatName names the common format tags that stampede refuses.
func wavFormatName(tag uint16) string {
	switch tag {
	case 0x0002:
		return "MS ADPCM"
	case 0x0006:
		return "A-law"
	case 0x0007:
		return "mu-law"
	case 0x0011:
		return "IMA ADPCM"
	case 0x0031:
		return "GSM 6.10"
	case 0x0055:
		return "MPEG layer 3"
	}
	return "unknown"
}

// decode converts the data chunk's whole frames to float64 as libsndfile's
// sf_read_double does with its default normalisation.
func (f wavFormat) decode(data []byte) PCM {
	frameBytes := f.bytesWidth * f.channels
	n := len(data) / frameBytes * f.channels
	out := make([]float64, n)
	w := f.bytesWidth
	for i := range out {
		s := data[i*w : i*w+w]
		switch {
		case f.float && w == 4:
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(s)))
		case f.float:
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(s))
		case w == 1:
			out[i] = float64(int(s[0])-128) / 0x80
		case w == 2:
			out[i] = float64(int16(binary.LittleEndian.Uint16(s))) / 0x8000
		case w == 3:
			v := int32(uint32(s[0])<<8 | uint32(s[1])<<16 | uint32(s[2])<<24)
			out[i] = float64(v) / 0x80000000
		default:
			out[i] = float64(int32(binary.LittleEndian.Uint32(s))) / 0x80000000
		}
	}
	return PCM{Samples: out, Channels: f.channels, SampleRate: f.sampleRate}
}

// EncodeWAV is soundfile.write(buf, samples, samplerate, format="WAV"): a
// 44-byte header and 16-bit little-endian PCM data. Samples convert as
// libsndfile 1.2.2 does with the clipping python-soundfile turns on: scale
// by 2^31, round half to even, saturate, keep the top 16 bits, i.e.
// floor(x·32768) for most x, and 32767 / -32768 for x ≥ 1 / x ≤ -1.
func EncodeWAV(p PCM) ([]byte, error) {
	if p.Channels < 1 || p.Channels > maxWAVChannels {
		return nil, fmt.Errorf("write WAV: %d channels, want 1 to %d", p.Channels, maxWAVChannels)
	}
	if p.SampleRate < 1 {
		return nil, fmt.Errorf("write WAV: sample rate %d, want a positive number of frames per second", p.SampleRate)
	}
	if len(p.Samples)%p.Channels != 0 {
		return nil, fmt.Errorf("write WAV: %d samples do not make whole frames of %d channels", len(p.Samples), p.Channels)
	}
	dataLen := 2 * len(p.Samples)
	if uint64(dataLen)+wavHeaderLen-8 > math.MaxUint32 {
		return nil, fmt.Errorf("write WAV: %d bytes of audio exceed the 4 GiB a RIFF file can hold", dataLen)
	}
	b := make([]byte, wavHeaderLen, wavHeaderLen+dataLen)
	copy(b[0:], "RIFF")
	binary.LittleEndian.PutUint32(b[4:], uint32(wavHeaderLen-8+dataLen))
	copy(b[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)
	binary.LittleEndian.PutUint16(b[20:], wavFormatPCM)
	binary.LittleEndian.PutUint16(b[22:], uint16(p.Channels))
	binary.LittleEndian.PutUint32(b[24:], uint32(p.SampleRate))
	binary.LittleEndian.PutUint32(b[28:], uint32(p.SampleRate*2*p.Channels))
	binary.LittleEndian.PutUint16(b[32:], uint16(2*p.Channels))
	binary.LittleEndian.PutUint16(b[34:], 16)
	copy(b[36:], "data")
	binary.LittleEndian.PutUint32(b[40:], uint32(dataLen))
	for _, x := range p.Samples {
		b = binary.LittleEndian.AppendUint16(b, uint16(pcm16(x)))
	}
	return b, nil
}

// pcm16 is libsndfile 1.2.2's d2les_clip_array for one sample. NaN, which
// C's lrint turns into INT_MIN on x86-64, becomes -32768 likewise.
func pcm16(x float64) int16 {
	scaled := x * 0x80000000
	switch {
	case scaled >= 0x7FFFFFFF:
		return math.MaxInt16
	case scaled <= -0x80000000 || math.IsNaN(scaled):
		return math.MinInt16
	}
	return int16(int32(math.RoundToEven(scaled)) >> 16)
}
