package datasets

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDecodeFLACMatchesWAV decodes files made by the reference encoder
// (testdata/flac/gen.sh) and compares every sample with the WAV they were
// made from.
func TestDecodeFLACMatchesWAV(t *testing.T) {
	for flac, wav := range map[string]string{
		"mono16-fixed.flac":   "mono16.wav",
		"mono16-lpc.flac":     "mono16.wav",
		"stereo16.flac":       "stereo16.wav",
		"stereo16-plain.flac": "stereo16.wav",
		"mono24.flac":         "mono24.wav",
	} {
		t.Run(flac, func(t *testing.T) {
			fb, err := os.ReadFile(filepath.Join("testdata", "flac", flac))
			if err != nil {
				t.Fatal(err)
			}
			want, err := ReadWAVFile(filepath.Join("testdata", "flac", wav))
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeFLAC(fb)
			if err != nil {
				t.Fatal(err)
			}
			if got.Channels != want.Channels || got.SampleRate != want.SampleRate || len(got.Samples) != len(want.Samples) {
				t.Fatalf("got %d ch %d Hz %d samples, want %d ch %d Hz %d samples",
					got.Channels, got.SampleRate, len(got.Samples), want.Channels, want.SampleRate, len(want.Samples))
			}
			for i := range got.Samples {
				if got.Samples[i] != want.Samples[i] {
					t.Fatalf("sample %d = %v, want %v", i, got.Samples[i], want.Samples[i])
				}
			}
			// Truncation is an error, not a panic or a short clip.
			if _, err := DecodeFLAC(fb[:len(fb)/2]); err == nil || !strings.Contains(err.Error(), "FLAC") {
				t.Errorf("truncated stream: %v", err)
			}
		})
	}
}

func FuzzDecodeFLAC(f *testing.F) {
	for _, name := range []string{"mono16-lpc.flac", "stereo16.flac"} {
		b, err := os.ReadFile(filepath.Join("testdata", "flac", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:2000])
	}
	f.Add([]byte("fLaC\x80\x00\x00\x22"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = DecodeFLAC(b)
	})
}

var writeCorpus = flag.Bool("write-corpus", false, "write the hostile inputs into testdata/fuzz")

// flacConstantBomb is a stream of frames of 65,536 samples on 8
// channels, each channel one constant subframe: 34 bytes a frame.
func flacConstantBomb(frames int) []byte {
	b := []byte("fLaC\x80\x00\x00\x22")
	si := make([]byte, 34)
	si[10], si[11], si[12], si[13] = 0x03, 0xE8, 0x0E, 0xF0 // 16 kHz, 8 channels, 16 bits
	b = append(b, si...)
	frame := []byte{0xFF, 0xF8, 0x70, 0x78, 0x00, 0xFF, 0xFF, 0x00}
	for range 8 {
		frame = append(frame, 0x00, 0x00, 0x00)
	}
	frame = append(frame, 0x00, 0x00)
	for range frames {
		b = append(b, frame...)
	}
	return b
}

func TestFLACExpansionBounded(t *testing.T) {
	// 600 frames: 314,572,800 samples, 2.4 GiB as float64.
	bomb := flacConstantBomb(600)
	if *writeCorpus {
		writeSeed(t, "FuzzDecodeFLAC", "constant-subframes", bomb)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := DecodeFLAC(bomb)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "decodes to more than") {
		t.Fatalf("err = %v, want the sample limit", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 256<<20 {
		t.Errorf("decoding allocated %d MiB", got>>20)
	}
	// A few such frames are a valid stream of silence.
	p, err := DecodeFLAC(flacConstantBomb(3))
	if err != nil || len(p.Samples) != 3*65536*8 || p.Channels != 8 {
		t.Fatalf("3 frames: %d samples, %d channels, %v", len(p.Samples), p.Channels, err)
	}
}

// writeSeed writes b as a seed corpus entry of a fuzz target.
func writeSeed(t *testing.T, target, name string, b []byte) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", b), 0o644); err != nil {
		t.Fatal(err)
	}
}
