package datasets

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// testWAV assembles a RIFF/WAVE file by hand, independently of EncodeWAV:
// a fmt chunk (fmtBody), then the extra chunks, then data. dataSize, when
// non-negative, overrides the data chunk's declared size.
type testWAV struct {
	fmtBody  []byte
	before   [][2]string // chunks (id, body) between fmt and data
	data     []byte
	dataSize int64
}

func (w testWAV) bytes() []byte {
	var b bytes.Buffer
	chunk := func(id string, body []byte, size uint32) {
		b.WriteString(id)
		_ = binary.Write(&b, binary.LittleEndian, size)
		b.Write(body)
		if len(body)%2 == 1 && id != "data" {
			b.WriteByte(0)
		}
	}
	b.WriteString("RIFF\x00\x00\x00\x00WAVE")
	chunk("fmt ", w.fmtBody, uint32(len(w.fmtBody)))
	for _, c := range w.before {
		chunk(c[0], []byte(c[1]), uint32(len(c[1])))
	}
	size := uint32(len(w.data))
	if w.dataSize >= 0 {
		size = uint32(w.dataSize)
	}
	chunk("data", w.data, size)
	out := b.Bytes()
	binary.LittleEndian.PutUint32(out[4:], uint32(len(out)-8))
	return out
}

// fmtChunk is a 16-byte fmt body (18 with cbSize for non-PCM tags).
func fmtChunk(tag uint16, channels, rate, bits int) []byte {
	b := binary.LittleEndian.AppendUint16(nil, tag)
	b = binary.LittleEndian.AppendUint16(b, uint16(channels))
	b = binary.LittleEndian.AppendUint32(b, uint32(rate))
	width := (bits + 7) / 8
	b = binary.LittleEndian.AppendUint32(b, uint32(rate*width*channels))
	b = binary.LittleEndian.AppendUint16(b, uint16(width*channels))
	return binary.LittleEndian.AppendUint16(b, uint16(bits))
}

// extensibleChunk is a WAVE_FORMAT_EXTENSIBLE fmt body with sub-format sub.
func extensibleChunk(sub uint16, channels, rate, bits int) []byte {
	b := fmtChunk(wavFormatExtensible, channels, rate, bits)
	b = binary.LittleEndian.AppendUint16(b, 22)
	b = binary.LittleEndian.AppendUint16(b, uint16(bits))
	b = binary.LittleEndian.AppendUint32(b, 3) // front left | front right
	b = binary.LittleEndian.AppendUint16(b, sub)
	return append(b, "\x00\x00\x00\x00\x10\x00\x80\x00\x00\xaa\x00\x38\x9b\x71"...)
}

func le(vals ...any) []byte {
	var b bytes.Buffer
	for _, v := range vals {
		_ = binary.Write(&b, binary.LittleEndian, v)
	}
	return b.Bytes()
}

func TestDecodeWAV(t *testing.T) {
	tests := []struct {
		name string
		file testWAV
		want PCM
	}{
		{"pcm16 mono", testWAV{fmtBody: fmtChunk(1, 1, 16000, 16), data: le(int16(0), int16(16384), int16(-32768), int16(32767)), dataSize: -1},
			PCM{[]float64{0, 0.5, -1, 32767.0 / 32768}, 1, 16000}},
		{"pcm8 stereo unsigned", testWAV{fmtBody: fmtChunk(1, 2, 8000, 8), data: []byte{128, 0, 255, 192}, dataSize: -1},
			PCM{[]float64{0, -1, 127.0 / 128, 0.5}, 2, 8000}},
		{"pcm24", testWAV{fmtBody: fmtChunk(1, 1, 48000, 24), data: []byte{0x00, 0x00, 0x40, 0xff, 0xff, 0xff, 0x00, 0x00, 0x80}, dataSize: -1},
			PCM{[]float64{0.5, -1.0 / (1 << 23), -1}, 1, 48000}},
		{"pcm32", testWAV{fmtBody: fmtChunk(1, 1, 44100, 32), data: le(int32(1<<30), int32(-1<<31)), dataSize: -1},
			PCM{[]float64{0.5, -1}, 1, 44100}},
		{"float32 beyond full scale", testWAV{fmtBody: fmtChunk(3, 1, 22050, 32), data: le(float32(0.25), float32(-1.5)), dataSize: -1},
			PCM{[]float64{0.25, -1.5}, 1, 22050}},
		{"float64", testWAV{fmtBody: fmtChunk(3, 1, 22050, 64), data: le(0.1, -0.75), dataSize: -1},
			PCM{[]float64{0.1, -0.75}, 1, 22050}},
		{"extensible pcm16 stereo", testWAV{fmtBody: extensibleChunk(1, 2, 16000, 16), data: le(int16(8192), int16(-8192)), dataSize: -1},
			PCM{[]float64{0.25, -0.25}, 2, 16000}},
		{"extensible float", testWAV{fmtBody: extensibleChunk(3, 1, 16000, 32), data: le(float32(0.5)), dataSize: -1},
			PCM{[]float64{0.5}, 1, 16000}},
		{"odd chunks skipped", testWAV{fmtBody: fmtChunk(1, 1, 8000, 16), before: [][2]string{{"LIST", "INFOabc"}, {"fact", "\x01\x00\x00\x00"}}, data: le(int16(-16384)), dataSize: -1},
			PCM{[]float64{-0.5}, 1, 8000}},
		{"unpatched data size", testWAV{fmtBody: fmtChunk(1, 1, 8000, 16), data: le(int16(16384), int16(0)), dataSize: 0xFFFFFFFF},
			PCM{[]float64{0.5, 0}, 1, 8000}},
		{"partial frame dropped", testWAV{fmtBody: fmtChunk(1, 2, 8000, 16), data: le(int16(16384), int16(0), int16(5)), dataSize: -1},
			PCM{[]float64{0.5, 0}, 2, 8000}},
		{"no frames", testWAV{fmtBody: fmtChunk(1, 1, 8000, 16), dataSize: -1},
			PCM{[]float64{}, 1, 8000}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeWAV(tc.file.bytes())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDecodeWAVErrors(t *testing.T) {
	pcm := fmtChunk(1, 1, 8000, 16)
	noData := testWAV{fmtBody: pcm, dataSize: -1}.bytes()
	noData = noData[:len(noData)-8] // drop the empty data chunk
	tests := []struct {
		name string
		file []byte
		want string
	}{
		{"short", []byte("RIFF"), "not a WAV file: 4 bytes is shorter than a RIFF header; stampede reads WAV files (RIFF/WAVE) holding PCM 8/16/24/32-bit or IEEE float 32/64-bit samples"},
		{"flac", []byte("fLaC\x00\x00\x00\x22rest of it"), "not a WAV file (it is FLAC); stampede reads WAV files"},
		{"ogg", []byte("OggS\x00\x02\x00\x00\x00\x00\x00\x00"), "not a WAV file (it is Ogg)"},
		{"mp3", []byte("ID3\x04\x00\x00\x00\x00\x00\x00\x00\x00"), "not a WAV file (it is MP3)"},
		{"avi", []byte("RIFF\x04\x00\x00\x00AVI "), `not a WAV file (a RIFF file of form "AVI ", not WAVE)`},
		{"text", []byte("hello, world"), `not a WAV file (it starts with "hell")`},
		{"adpcm", testWAV{fmtBody: fmtChunk(2, 1, 8000, 4), dataSize: -1}.bytes(), "WAV format tag 0x0002 (MS ADPCM) is not supported; stampede reads"},
		{"mulaw", testWAV{fmtBody: fmtChunk(7, 1, 8000, 8), dataSize: -1}.bytes(), "WAV format tag 0x0007 (mu-law) is not supported"},
		{"float16", testWAV{fmtBody: fmtChunk(3, 1, 8000, 16), dataSize: -1}.bytes(), "WAV IEEE float with 16 bits per sample is not supported"},
		{"pcm 40-bit", testWAV{fmtBody: fmtChunk(1, 1, 8000, 40), dataSize: -1}.bytes(), "WAV PCM with 40 bits per sample is not supported"},
		{"no channels", testWAV{fmtBody: fmtChunk(1, 0, 8000, 16), dataSize: -1}.bytes(), "malformed WAV file: 0 channels, want 1 to 1024"},
		{"no rate", testWAV{fmtBody: fmtChunk(1, 1, 0, 16), dataSize: -1}.bytes(), "malformed WAV file: sample rate 0"},
		{"short fmt", testWAV{fmtBody: pcm[:12], dataSize: -1}.bytes(), "malformed WAV file: fmt chunk of 12 bytes, want at least 16"},
		{"short extensible", testWAV{fmtBody: fmtChunk(wavFormatExtensible, 1, 8000, 16), dataSize: -1}.bytes(), "malformed WAV file: WAVE_FORMAT_EXTENSIBLE fmt chunk of 16 bytes, want at least 26"},
		{"no data", noData, "malformed WAV file: no data chunk"},
		{"no fmt", []byte("RIFF\x0c\x00\x00\x00WAVELIST\x00\x00\x00\x00"), "malformed WAV file: no fmt chunk"},
		{"data first", []byte("RIFF\x0c\x00\x00\x00WAVEdata\x00\x00\x00\x00"), "malformed WAV file: data chunk before the fmt chunk"},
		{"truncated fmt", []byte("RIFF\x0c\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00"), "malformed WAV file: fmt chunk of 16 bytes runs past the end of the file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeWAV(tc.file)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want prefix %q", err, tc.want)
			}
		})
	}
}

// TestEncodeWAVBytes pins the whole file for two stereo frames, header
// field by field: what soundfile.write(buf, [[0, .5], [-1, 1]], 16000,
// format="WAV") writes.
func TestEncodeWAVBytes(t *testing.T) {
	got, err := EncodeWAV(PCM{Samples: []float64{0, 0.5, -1, 1}, Channels: 2, SampleRate: 16000})
	if err != nil {
		t.Fatal(err)
	}
	want := "RIFF" + "\x2c\x00\x00\x00" + "WAVE" +
		"fmt " + "\x10\x00\x00\x00" + "\x01\x00" + "\x02\x00" + "\x80\x3e\x00\x00" + "\x00\xfa\x00\x00" + "\x04\x00" + "\x10\x00" +
		"data" + "\x08\x00\x00\x00" +
		"\x00\x00" + "\x00\x40" + "\x00\x80" + "\xff\x7f"
	if string(got) != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestPCM16 pins libsndfile 1.2.2's clipping double→PCM_16 conversion:
// lrint(x·2^31) >> 16, so values between two 16-bit steps floor.
func TestPCM16(t *testing.T) {
	tests := []struct {
		x    float64
		want int16
	}{
		{0, 0},
		{0.5, 16384},
		{-0.5, -16384},
		{1, 32767},
		{-1, -32768},
		{2, 32767},
		{-3, -32768},
		{32767.0 / 32768, 32767},
		{1e-9, 0},
		{-1e-9, -1},
		{0.3, 9830},   // 0.3·32768 = 9830.4
		{-0.3, -9831}, // floors, not rounds
		{1.5 / 32768, 1},
		{math.Inf(1), 32767},
		{math.Inf(-1), -32768},
		{math.NaN(), -32768},
	}
	for _, tc := range tests {
		if got := pcm16(tc.x); got != tc.want {
			t.Errorf("pcm16(%v) = %d, want %d", tc.x, got, tc.want)
		}
	}
}

func TestEncodeWAVErrors(t *testing.T) {
	tests := []struct {
		p    PCM
		want string
	}{
		{PCM{Samples: []float64{0}, Channels: 0, SampleRate: 8000}, "write WAV: 0 channels, want 1 to 1024"},
		{PCM{Samples: []float64{0}, Channels: 1, SampleRate: 0}, "write WAV: sample rate 0, want a positive number of frames per second"},
		{PCM{Samples: []float64{0, 0, 0}, Channels: 2, SampleRate: 8000}, "write WAV: 3 samples do not make whole frames of 2 channels"},
	}
	for _, tc := range tests {
		if _, err := EncodeWAV(tc.p); err == nil || err.Error() != tc.want {
			t.Errorf("EncodeWAV(%+v) error %v, want %q", tc.p, err, tc.want)
		}
	}
}

// TestWAVRoundTrip: a 16-bit file read and written again is the same
// file, and 8-bit and in-range float files keep their values at 16 bits,
// as they do through soundfile.read and soundfile.write.
func TestWAVRoundTrip(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("testdata", "custom_audio", "tone_mono_16k.wav"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := DecodeWAV(golden)
	if err != nil {
		t.Fatal(err)
	}
	again, err := EncodeWAV(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, golden) {
		t.Error("16-bit WAV changed on a read/write round trip")
	}

	u8 := testWAV{fmtBody: fmtChunk(1, 1, 8000, 8), data: []byte{0, 1, 127, 128, 129, 255}, dataSize: -1}.bytes()
	f32 := testWAV{fmtBody: fmtChunk(3, 1, 8000, 32), data: le(float32(-1), float32(-1.0/256), float32(0), float32(0.25), float32(127.0/128)), dataSize: -1}.bytes()
	for name, tc := range map[string]struct {
		file []byte
		want []int16
	}{
		"8-bit": {u8, []int16{-32768, -32512, -256, 0, 256, 32512}},
		"float": {f32, []int16{-32768, -128, 0, 8192, 32512}},
	} {
		p, err := DecodeWAV(tc.file)
		if err != nil {
			t.Fatal(name, err)
		}
		wav, err := EncodeWAV(p)
		if err != nil {
			t.Fatal(name, err)
		}
		var got []int16
		for i := wavHeaderLen; i < len(wav); i += 2 {
			got = append(got, int16(binary.LittleEndian.Uint16(wav[i:])))
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: samples %v, want %v", name, got, tc.want)
		}
	}
}

func TestPCMDuration(t *testing.T) {
	p := PCM{Samples: make([]float64, 2*24000), Channels: 2, SampleRate: 16000}
	if p.Frames() != 24000 || p.DurationSec() != 1.5 {
		t.Errorf("frames %d duration %v, want 24000 and 1.5", p.Frames(), p.DurationSec())
	}
	if (PCM{}).DurationSec() != 0 || (PCM{}).Frames() != 0 {
		t.Error("empty PCM has frames or duration")
	}
}

func TestReadWAVFileErrors(t *testing.T) {
	dir := t.TempDir()
	flac := filepath.Join(dir, "clip.flac")
	if err := os.WriteFile(flac, []byte("fLaC\x00\x00\x00\x22"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadWAVFile(flac)
	if want := "audio file " + flac + ": not a WAV file (it is FLAC); stampede reads WAV files"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %v, want prefix %q", err, want)
	}
	missing := filepath.Join(dir, "missing.wav")
	if _, err := ReadWAVFile(missing); err == nil || !strings.Contains(err.Error(), missing) || !os.IsNotExist(errorsUnwrapAll(err)) {
		t.Errorf("error %v, want a not-exist error naming %s", err, missing)
	}
}

func errorsUnwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

// goldenAudio are the WAV files under testdata/custom_audio, made by code:
// go test ./datasets -run TestAudioGolden -update rewrites them.
var goldenAudio = map[string]func() []byte{
	// A 440 Hz tone at half scale, 16 kHz mono, 10 ms, as EncodeWAV
	// writes it (soundfile.write's PCM_16).
	"tone_mono_16k.wav": func() []byte {
		wav, err := EncodeWAV(tone(1, 16000, 160, 440))
		if err != nil {
			panic(err)
		}
		return wav
	},
	// The same kind of tone as an 8-bit unsigned stereo file at 8 kHz,
	// 5 ms, right channel inverted, with a LIST chunk before the data.
	"tone_stereo_u8.wav": func() []byte {
		p := tone(2, 8000, 40, 440)
		data := make([]byte, len(p.Samples))
		for i, x := range p.Samples {
			data[i] = byte(int(math.Round(x*127)) + 128)
		}
		return testWAV{fmtBody: fmtChunk(1, 2, 8000, 8), before: [][2]string{{"LIST", "INFOISFTtest"}}, data: data, dataSize: -1}.bytes()
	},
}

// tone is a half-scale sine of hz, the second channel (if any) inverted.
func tone(channels, rate, frames int, hz float64) PCM {
	p := PCM{Channels: channels, SampleRate: rate}
	for i := range frames {
		x := 0.5 * math.Sin(2*math.Pi*hz*float64(i)/float64(rate))
		p.Samples = append(p.Samples, x)
		if channels == 2 {
			p.Samples = append(p.Samples, -x)
		}
	}
	return p
}

func TestAudioGolden(t *testing.T) {
	for name, make := range goldenAudio {
		path := filepath.Join("testdata", "custom_audio", name)
		want := make()
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what its generator makes (run with -update after an intended change)", path)
		}
	}
}
