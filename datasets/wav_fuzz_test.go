package datasets

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecodeWAV: any bytes are refused with an error or decoded into whole
// frames, and what decodes writes out as a 16-bit WAV that decodes back
// to the same shape.
func FuzzDecodeWAV(f *testing.F) {
	for _, name := range []string{"tone_mono_16k.wav", "tone_stereo_u8.wav"} {
		b, err := os.ReadFile(filepath.Join("testdata", "custom_audio", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(testWAV{fmtBody: extensibleChunk(3, 2, 8000, 32), before: [][2]string{{"PEAK", "odd"}}, data: le(float32(0.5), float32(-2)), dataSize: -1}.bytes())
	f.Add(testWAV{fmtBody: fmtChunk(1, 3, 8000, 24), data: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, dataSize: 0xFFFFFFF0}.bytes())
	f.Add([]byte("RIFF\x00\x00\x00\x00WAVEfmt \xff\xff\xff\xff"))
	f.Add([]byte("fLaC"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodeWAV(b)
		if err != nil {
			return
		}
		if p.Channels < 1 || p.SampleRate < 1 || len(p.Samples)%p.Channels != 0 {
			t.Fatalf("decoded %d samples of %d channels at %d Hz", len(p.Samples), p.Channels, p.SampleRate)
		}
		wav, err := EncodeWAV(p)
		if err != nil {
			t.Fatalf("EncodeWAV of a decoded file: %v", err)
		}
		q, err := DecodeWAV(wav)
		if err != nil {
			t.Fatalf("DecodeWAV of EncodeWAV output: %v", err)
		}
		if q.Channels != p.Channels || q.SampleRate != p.SampleRate || len(q.Samples) != len(p.Samples) {
			t.Fatalf("round trip changed the shape: %d×%d at %d Hz became %d×%d at %d Hz",
				p.Frames(), p.Channels, p.SampleRate, q.Frames(), q.Channels, q.SampleRate)
		}
	})
}
