package hfhub

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
)

type benchRow struct {
	ID   int64  `parquet:"id"`
	Text string `parquet:"text"`
}

// BenchmarkParquetCodecs reads a 50,000-row file (a number and a
// sentence a row) written with each codec; ns/op is per file. The page
// checks decode gzip, zstd and LZ4 pages once more, snappy's not; the
// -checks benchmarks open the file and check every row group without
// reading rows.
func BenchmarkParquetCodecs(b *testing.B) {
	for _, c := range []struct {
		name  string
		codec parquet.WriterOption
	}{
		{"snappy", parquet.Compression(&parquet.Snappy)},
		{"zstd", parquet.Compression(&parquet.Zstd)},
		{"gzip", parquet.Compression(&parquet.Gzip)},
	} {
		var buf bytes.Buffer
		w := parquet.NewGenericWriter[benchRow](&buf, c.codec)
		rows := make([]benchRow, 50000)
		for i := range rows {
			rows[i] = benchRow{int64(i), fmt.Sprintf("row %d says something about the number %d", i, i*7919%1000)}
		}
		if _, err := w.Write(rows); err != nil {
			b.Fatal(err)
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		path := filepath.Join(b.TempDir(), c.name+".parquet")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				src, err := openParquet(path)
				if err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := src.next(); errors.Is(err, io.EOF) {
						break
					} else if err != nil {
						b.Fatal(err)
					}
				}
				src.close()
			}
		})
		// The checks alone: what the full read above pays for them.
		b.Run(c.name+"-checks", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				src, err := openParquet(path)
				if err != nil {
					b.Fatal(err)
				}
				s := src.(*parquetSource)
				for s.group < len(s.pf.RowGroups()) {
					if err := s.nextGroup(); err != nil {
						b.Fatal(err)
					}
				}
				src.close()
			}
		})
	}
}
