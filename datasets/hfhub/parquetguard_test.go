package hfhub

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

var writeCorpus = flag.Bool("write-corpus", false, "write the hostile Parquet files into testdata/fuzz/FuzzParquetRows")

type dictRow struct {
	ID   int64  `parquet:"id"`
	Text string `parquet:"text,dict"`
}

// writeDict writes rows with a dictionary-encoded text column.
func writeDict(t testing.TB, codec parquet.WriterOption, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	w := parquet.NewGenericWriter[dictRow](&b, codec, parquet.DataPageVersion(1))
	rows := make([]dictRow, n)
	for i := range rows {
		rows[i] = dictRow{ID: int64(i), Text: fmt.Sprintf("text %d", i%7)}
	}
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

type deltaRow struct {
	ID int64 `parquet:"id,delta"`
}

// writeDelta writes a DELTA_BINARY_PACKED column in v1 pages.
func writeDelta(t testing.TB) []byte {
	t.Helper()
	var b bytes.Buffer
	w := parquet.NewGenericWriter[deltaRow](&b, parquet.DataPageVersion(1))
	rows := make([]deltaRow, 300)
	for i := range rows {
		rows[i] = deltaRow{ID: int64(i * 3)}
	}
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// writeDictV2 writes data pages of version 2 (parquet-go's default).
func writeDictV2(t testing.TB) []byte {
	t.Helper()
	var b bytes.Buffer
	w := parquet.NewGenericWriter[dictRow](&b, parquet.DataPageVersion(2))
	rows := make([]dictRow, 20)
	for i := range rows {
		rows[i] = dictRow{ID: int64(i), Text: "v2"}
	}
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// craftPage is one page of a parsed file: its header and body.
type craftPage struct {
	h    *format.PageHeader
	body []byte
}

// craft parses a valid file, lets edit change its metadata and pages,
// and lays the file out again with offsets and sizes following the
// pages.
func craft(t testing.TB, file []byte, edit func(md *format.FileMetaData, pages [][][]craftPage)) []byte {
	t.Helper()
	md, _, err := parquetFooter(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	pages := make([][][]craftPage, len(md.RowGroups))
	for g := range md.RowGroups {
		for _, c := range md.RowGroups[g].Columns {
			m := c.MetaData
			pos := m.DataPageOffset
			if m.DictionaryPageOffset > 0 {
				pos = min(pos, m.DictionaryPageOffset)
			}
			end := pos + m.TotalCompressedSize
			var list []craftPage
			for pos < end {
				n, err := skimThrift(file[pos:end])
				if err != nil {
					t.Fatal(err)
				}
				h := new(format.PageHeader)
				if err := thrift.Unmarshal(new(thrift.CompactProtocol), file[pos:pos+int64(n)], h); err != nil {
					t.Fatal(err)
				}
				pos += int64(n)
				list = append(list, craftPage{h, append([]byte(nil), file[pos:pos+int64(h.CompressedPageSize)]...)})
				pos += int64(h.CompressedPageSize)
			}
			pages[g] = append(pages[g], list)
		}
	}
	edit(md, pages)
	out := []byte("PAR1")
	for g := range md.RowGroups {
		for j := range md.RowGroups[g].Columns {
			m := &md.RowGroups[g].Columns[j].MetaData
			start := int64(len(out))
			m.DictionaryPageOffset, m.DataPageOffset = 0, 0
			for _, p := range pages[g][j] {
				if p.h.Type == format.DictionaryPage {
					m.DictionaryPageOffset = int64(len(out))
				} else if m.DataPageOffset == 0 {
					m.DataPageOffset = int64(len(out))
				}
				p.h.CRC = 0 // bodies may have been edited
				hb, err := thrift.Marshal(new(thrift.CompactProtocol), p.h)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, hb...)
				out = append(out, p.body...)
			}
			if m.TotalCompressedSize >= 0 && m.TotalCompressedSize < 1<<40 {
				m.TotalCompressedSize = int64(len(out)) - start
			}
			c := &md.RowGroups[g].Columns[j]
			c.FileOffset = start
			// The page index and bloom filter are not carried over.
			c.ColumnIndexOffset, c.ColumnIndexLength, c.OffsetIndexOffset, c.OffsetIndexLength = 0, 0, 0, 0
			m.BloomFilterOffset, m.BloomFilterLength = 0, 0
		}
	}
	fb, err := thrift.Marshal(new(thrift.CompactProtocol), md)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, fb...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(fb)))
	return append(out, "PAR1"...)
}

// hostileParquet are files that declare more than they hold, each with
// what its error must say. Before the checks, parquet-go allocated what
// they declare (gigabytes) or, for the LZ4 one, doubled its buffer
// without end.
func hostileParquet(t testing.TB) []struct {
	name, want string
	data       []byte
} {
	plain := writeDict(t, parquet.Compression(&parquet.Uncompressed), 20)
	snappy := writeDict(t, parquet.Compression(&parquet.Snappy), 20)
	firstPage := func(file []byte, typ format.PageType, edit func(p *craftPage)) []byte {
		return craft(t, file, func(md *format.FileMetaData, pages [][][]craftPage) {
			for j := range pages[0] {
				for k := range pages[0][j] {
					if pages[0][j][k].h.Type == typ {
						edit(&pages[0][j][k])
						return
					}
				}
			}
			t.Fatalf("no page of type %v", typ)
		})
	}
	// A thrift list header declaring n elements of type t.
	listOf := func(n int, typ byte) []byte { return binary.AppendUvarint([]byte{0xF0 | typ}, uint64(n)) }
	footer := func(body []byte) []byte {
		b := append([]byte("PAR1"), body...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(body)))
		return append(b, "PAR1"...)
	}
	return []struct {
		name, want string
		data       []byte
	}{
		{"footer-length", "the footer declares 4043309056 bytes but the file has 12",
			[]byte("PAR1\x00\x00\x00\xf1PAR1")},
		// FileMetaData field 2 (schema), a list of 2^30 structs.
		{"footer-list", "list of 1073741824, more than 1000000",
			footer(append([]byte{0x15, 0x02, 0x19}, listOf(1<<30, 12)...))},
		// Field 6 (created_by), a 2 GiB string.
		{"footer-string", "corrupt footer: binary of 2147483647",
			footer(binary.AppendUvarint([]byte{0x68}, 1<<31-1))},
		{"schema-children", "declares 1000000000 children",
			craft(t, plain, func(md *format.FileMetaData, _ [][][]craftPage) {
				md.Schema[0].NumChildren.V = 1e9
			})},
		{"chunk-size", "outside the file's",
			craft(t, plain, func(md *format.FileMetaData, _ [][][]craftPage) {
				md.RowGroups[0].Columns[0].MetaData.TotalCompressedSize = 1 << 50
			})},
		{"page-compressed-size", "declares 2147483647 compressed bytes",
			firstPage(plain, format.DataPage, func(p *craftPage) { p.h.CompressedPageSize = 1<<31 - 1 })},
		{"page-uncompressed-size", "declares 2000000000 uncompressed bytes",
			firstPage(plain, format.DataPage, func(p *craftPage) { p.h.UncompressedPageSize = 2e9 })},
		{"snappy-ratio", "more than SNAPPY can expand to",
			firstPage(snappy, format.DataPage, func(p *craftPage) { p.h.UncompressedPageSize = 1 << 29 })},
		{"snappy-preamble", "its snappy block decodes to 4294967295 bytes",
			firstPage(snappy, format.DataPage, func(p *craftPage) {
				_, k := binary.Uvarint(p.body)
				p.body = append(binary.AppendUvarint(nil, 1<<32-1), p.body[k:]...)
				p.h.CompressedPageSize = int32(len(p.body))
			})},
		{"dictionary-values", "declares a dictionary of 2000000000 values",
			firstPage(plain, format.DictionaryPage, func(p *craftPage) { p.h.DictionaryPageHeader.V.NumValues = 2e9 })},
		{"page-values", "declares 2000000000 values",
			firstPage(plain, format.DataPage, func(p *craftPage) { p.h.DataPageHeader.V.NumValues = 2e9 })},
		{"page-v2-nulls", "declares 20 values, 2000000000 nulls",
			firstPage(writeDictV2(t), format.DataPageV2, func(p *craftPage) { p.h.DataPageHeaderV2.V.NumNulls = 2e9 })},
		{"delta-total-values", "its DELTA_BINARY_PACKED header declares 2147483647 values in a page of 300",
			firstPage(writeDelta(t), format.DataPage, func(p *craftPage) {
				var v [3]uint64
				rest := p.body
				for i := range v {
					x, k := binary.Uvarint(rest)
					v[i], rest = x, rest[k:]
				}
				b := binary.AppendUvarint(nil, v[0])
				b = binary.AppendUvarint(b, v[1])
				b = binary.AppendUvarint(b, 1<<31-1)
				p.body = append(b, rest...)
				p.h.CompressedPageSize = int32(len(p.body))
				p.h.UncompressedPageSize = int32(len(p.body))
			})},
		{"chunk-values", "declare 50331648 values in",
			craft(t, plain, func(md *format.FileMetaData, pages [][][]craftPage) {
				// Three copies of the id column's data page, 16 Mi
				// values each.
				list := pages[0][0]
				p := list[len(list)-1]
				p.h.DataPageHeader.V.NumValues = 1 << 24
				pages[0][0] = []craftPage{p, p, p}
			})},
		{"lz4-corrupt", "corrupt LZ4 block",
			firstPage(writeDict(t, parquet.Compression(&parquet.Lz4Raw), 20), format.DataPage, func(p *craftPage) {
				p.body = bytes.Repeat([]byte{0xFF}, len(p.body))
			})},
		{"zstd-content-size", "its zstd data does not decode within",
			firstPage(writeDict(t, parquet.Compression(&parquet.Zstd), 20), format.DataPage, func(p *craftPage) {
				// One frame with a 1 KiB window declaring 32 GiB of
				// content, and an RLE block.
				p.body = binary.LittleEndian.AppendUint64([]byte{0x28, 0xB5, 0x2F, 0xFD, 0xC0, 0x00}, 32<<30)
				p.body = append(p.body, 0x53, 0x00, 0x00, 'a')
				p.h.CompressedPageSize = int32(len(p.body))
			})},
		{"gzip-bomb", "its gzip data decodes to more than",
			firstPage(writeDict(t, parquet.Compression(&parquet.Gzip), 20), format.DataPage, func(p *craftPage) {
				var b bytes.Buffer
				z, _ := parquet.Gzip.Encode(nil, make([]byte, 64<<20))
				b.Write(z)
				p.body = b.Bytes()
				p.h.CompressedPageSize = int32(len(p.body))
			})},
	}
}

func TestHostileParquet(t *testing.T) {
	dir := t.TempDir()
	for _, c := range hostileParquet(t) {
		t.Run(c.name, func(t *testing.T) {
			if *writeCorpus {
				seed := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", c.data)
				if err := os.WriteFile(filepath.Join("testdata", "fuzz", "FuzzParquetRows", c.name), []byte(seed), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p := filepath.Join(dir, c.name+".parquet")
			if err := os.WriteFile(p, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := readAll(p)
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one naming %s and saying %q", err, p, c.want)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 80<<20 {
				t.Errorf("reading it allocated %d MiB", got>>20)
			}
		})
	}
}

// readLZ4 reads every row of a Parquet file.
func readAll(path string) error {
	src, err := openParquet(path)
	if err != nil {
		return err
	}
	defer src.close()
	for {
		if _, err := src.next(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// The files the hostile ones are made from read whole, with every codec.
func TestParquetCodecs(t *testing.T) {
	codecs := map[string]parquet.WriterOption{
		"uncompressed": parquet.Compression(&parquet.Uncompressed),
		"snappy":       parquet.Compression(&parquet.Snappy),
		"gzip":         parquet.Compression(&parquet.Gzip),
		"zstd":         parquet.Compression(&parquet.Zstd),
		"lz4":          parquet.Compression(&parquet.Lz4Raw),
		"brotli":       parquet.Compression(&parquet.Brotli),
	}
	for name, codec := range codecs {
		p := filepath.Join(t.TempDir(), name+".parquet")
		// Enough rows for several pages.
		if err := os.WriteFile(p, writeDict(t, codec, 50000), 0o644); err != nil {
			t.Fatal(err)
		}
		src, err := openParquet(p)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			o, err := src.next()
			if errors.Is(err, io.EOF) {
				break
			}
			if name == "lz4" && err != nil && strings.Contains(err.Error(), "less than 3:1") {
				// Refused rather than read as zeros: TestParquetLZ4
				// covers both sides.
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if id, _ := o.Get("id"); id != int64(n) {
				t.Fatalf("%s: row %d has id %v", name, n, id)
			}
			n++
		}
		src.close()
		if n != 50000 && name != "lz4" {
			t.Errorf("%s: %d rows, want 50000", name, n)
		}
	}
}

type textRow struct {
	ID   int64  `parquet:"id,plain"`
	Text string `parquet:"text,plain"`
}

// readLZ4 reads every row of an LZ4_RAW file of rows with the given
// texts (ids i/1000, so that column compresses too), checking each row,
// and returns the first error.
func readLZ4(t *testing.T, text func(i int) string, n int) error {
	t.Helper()
	var b bytes.Buffer
	w := parquet.NewGenericWriter[textRow](&b, parquet.Compression(&parquet.Lz4Raw), parquet.DataPageVersion(1))
	rows := make([]textRow, n)
	for i := range rows {
		rows[i] = textRow{ID: int64(i / 1000), Text: text(i)}
	}
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "lz4.parquet")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := openParquet(p)
	if err != nil {
		return err
	}
	defer src.close()
	for i := 0; ; i++ {
		o, err := src.next()
		if errors.Is(err, io.EOF) {
			if i != n {
				t.Fatalf("%d rows, want %d", i, n)
			}
			return nil
		}
		if err != nil {
			return err
		}
		id, _ := o.Get("id")
		txt, _ := o.Get("text")
		if id != int64(i/1000) || txt != text(i) {
			t.Fatalf("row %d reads id %v text %q, want %d %q", i, id, txt, i/1000, text(i))
		}
	}
}

// parquet-go v0.32.0 returns an LZ4_RAW page compressed less than 3:1 as
// zeros when its pooled buffer is short; such pages are refused, and
// pages at 3:1 or more read exactly.
func TestParquetLZ4(t *testing.T) {
	repetitive := func(i int) string { return strings.Repeat("the same words again ", 20) + fmt.Sprint(i%5) }
	if err := readLZ4(t, repetitive, 20000); err != nil {
		t.Fatalf("a 3:1-or-better LZ4 file: %v", err)
	}
	// Hex of a hash-like sequence barely compresses.
	noisy := func(i int) string {
		x := uint64(i)*0x9e3779b97f4a7c15 + 1
		x ^= x >> 29
		x *= 0xbf58476d1ce4e5b9
		return fmt.Sprintf("%016x%016x", x, x*0x94d049bb133111eb)
	}
	err := readLZ4(t, noisy, 20000)
	if err == nil || !strings.Contains(err.Error(), "less than 3:1") || !strings.Contains(err.Error(), "re-save") {
		t.Fatalf("a poorly compressed LZ4 file: %v, want the less-than-3:1 refusal", err)
	}
}
