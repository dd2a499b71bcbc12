package datasets

import (
	"os"
	"path/filepath"
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
