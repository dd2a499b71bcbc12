package hfhub

import (
	"errors"
	"io"
	"path/filepath"
	"testing"
)

// BenchmarkRows reads a 20,000-row Parquet file in each order; ns/op is
// per file, so divide by 20,000 for a row.
func BenchmarkRows(b *testing.B) {
	path := filepath.Join(b.TempDir(), "rows.parquet")
	writeIDs(b, path, 0, 20000)
	for _, c := range []struct {
		name  string
		order Order
	}{
		{"sequential", Order{}},
		{"stream-shuffle", Order{Shuffle: true, Stream: true, Seed: 1}},
		{"whole-shuffle", Order{Shuffle: true, Seed: 1}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, err := Open([]string{path}, c.order)
				if err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := r.Next(); errors.Is(err, io.EOF) {
						break
					} else if err != nil {
						b.Fatal(err)
					}
				}
				r.Close()
			}
		})
	}
}
