package hfhub

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestOrderMatchesNumpy checks both shuffles against orders drawn with
// real numpy (testdata/gen_order.py), across file boundaries, past the
// buffer, and with the file list shuffled.
func TestOrderMatchesNumpy(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "order.json"))
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Cases []struct {
			Sizes  []int   `json:"sizes"`
			Seed   int64   `json:"seed"`
			Stream []int64 `json:"stream"`
			Whole  []int64 `json:"whole"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &golden); err != nil {
		t.Fatal(err)
	}
	for _, c := range golden.Cases {
		t.Run(fmt.Sprint(c.Sizes, c.Seed), func(t *testing.T) {
			dir := t.TempDir()
			var files []string
			start := 0
			for i, n := range c.Sizes {
				f := filepath.Join(dir, fmt.Sprintf("%d.parquet", i))
				writeIDs(t, f, start, start+n)
				files = append(files, f)
				start += n
			}
			if got := readIDs(t, files, Order{Shuffle: true, Stream: true, Seed: c.Seed}); !reflect.DeepEqual(got, c.Stream) {
				t.Errorf("stream order differs from numpy's at %d", firstDiff(got, c.Stream))
			}
			if got := readIDs(t, files, Order{Shuffle: true, Seed: c.Seed}); !reflect.DeepEqual(got, c.Whole) {
				t.Errorf("whole-split order differs from numpy's at %d", firstDiff(got, c.Whole))
			}
		})
	}
}

func firstDiff(a, b []int64) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
