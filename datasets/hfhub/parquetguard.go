package hfhub

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
	"github.com/pierrec/lz4/v4"
)

// parquet-go trusts the sizes and counts a file declares: it allocates the
// footer, each page, each decompressed page and each dictionary before
// reading them, and its LZ4 decoder doubles its buffer for as long as a
// corrupt block fails to decode. A file from the network is checked here
// first, so that what parquet-go allocates is bounded by the bytes that
// are really in the file: the footer before the file is opened, and each
// row group's pages before its rows are read.
//
// The limits are far above what datasets' (pyarrow's) writers produce.
const (
	// maxFooter bounds the file metadata (pyarrow's footers are KiBs).
	maxFooter = 64 << 20
	// maxContainer bounds one thrift list, set or map, as Arrow's
	// thrift_container_size_limit does (the same 1,000,000), and
	// maxStructs all structs in the lists of one footer or page header.
	maxContainer = 1_000_000
	maxStructs   = 2_000_000
	// maxThriftDepth bounds the nesting of thrift structs and lists
	// (Parquet's footer nests about 8 deep).
	maxThriftDepth = 32
	// maxSchemaDepth bounds the nesting of the file's schema.
	maxSchemaDepth = 64
	// maxPageHeader bounds one page header (its statistics included).
	maxPageHeader = 16 << 20
	// maxPageBytes bounds one page, decompressed; maxPageValues the
	// values (nulls included) a page or dictionary declares.
	maxPageBytes  = 1 << 30
	maxPageValues = 1 << 24
	// maxChunkNulls bounds the values of a column chunk beyond 8 a byte
	// of its pages (a value takes a bit at least; a null, in
	// run-length-encoded levels, next to nothing): pages of nulls in a
	// few bytes each could make one row a list of billions.
	maxChunkNulls = 1 << 25
)

// maxRatio is the most a compressed byte can expand to in each codec
// (snappy's format tops out near 21, deflate's at 1,032, an LZ4 block's
// near 255, a zstd RLE block's at 32,768); a page may declare at most
// this times its compressed size, plus ratioSlack. 0: not supported by
// parquet-go either, checked by it.
func maxRatio(c format.CompressionCodec) int64 {
	switch c {
	case format.Uncompressed:
		return 1
	case format.Snappy:
		return 32
	case format.Gzip:
		return 1100
	case format.Lz4Raw:
		return 256
	case format.Zstd:
		return 1 << 16
	case format.Brotli:
		return 1 << 22
	}
	return 0
}

const ratioSlack = 256

// parquetFooter reads and checks the footer of a Parquet file of size
// bytes, and returns where it starts.
func parquetFooter(r io.ReaderAt, size int64) (*format.FileMetaData, int64, error) {
	if size < 12 {
		return nil, 0, fmt.Errorf("%d bytes is too short for a Parquet file (magic, footer, magic)", size)
	}
	var tail [8]byte
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return nil, 0, fmt.Errorf("reading the footer: %v", err)
	}
	switch string(tail[4:]) {
	case "PAR1":
	case "PARE":
		return nil, 0, errors.New("the footer is encrypted (magic PARE); encrypted Parquet files are not supported")
	default:
		return nil, 0, fmt.Errorf("invalid magic footer %q, want \"PAR1\"", tail[4:])
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n > size-12 {
		return nil, 0, fmt.Errorf("the footer declares %d bytes but the file has %d", n, size)
	}
	if n > maxFooter {
		return nil, 0, fmt.Errorf("the footer declares %d bytes, more than the %d MiB stampede reads", n, maxFooter>>20)
	}
	b := make([]byte, n)
	if _, err := r.ReadAt(b, size-8-n); err != nil {
		return nil, 0, fmt.Errorf("reading the footer: %v", err)
	}
	used, err := skimThrift(b)
	if err != nil {
		return nil, 0, fmt.Errorf("corrupt footer: %v", err)
	}
	if used != len(b) {
		// A signed plaintext footer carries 28 bytes after the metadata.
		return nil, 0, fmt.Errorf("corrupt footer: %d bytes after the file metadata (signed footers are not supported)", len(b)-used)
	}
	md := new(format.FileMetaData)
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), b, md); err != nil {
		return nil, 0, fmt.Errorf("corrupt footer: %v", err)
	}
	footerAt := size - 8 - n
	if err := checkMetadata(md, footerAt); err != nil {
		return nil, 0, err
	}
	return md, footerAt, nil
}

// checkMetadata checks the schema's shape and that every column chunk
// lies between the header magic and the footer.
func checkMetadata(md *format.FileMetaData, footerAt int64) error {
	if len(md.Schema) == 0 {
		return errors.New("the footer has no schema")
	}
	// Walk the schema depth first: each group opens NumChildren slots.
	leaves := 0
	var open []int32
	for i := range md.Schema {
		s := &md.Schema[i]
		if i > 0 && len(open) == 0 {
			return fmt.Errorf("schema element %d (%q) lies outside the root", i, s.Name)
		}
		if len(open) > 0 {
			open[len(open)-1]--
		}
		n := int32(0)
		if s.NumChildren.Valid {
			n = s.NumChildren.V
		}
		switch {
		case n < 0:
			return fmt.Errorf("schema element %d (%q) declares %d children", i, s.Name, n)
		case n > 0:
			if int(n) > len(md.Schema)-1-i {
				return fmt.Errorf("schema element %d (%q) declares %d children, but only %d elements follow", i, s.Name, n, len(md.Schema)-1-i)
			}
			if len(open) >= maxSchemaDepth {
				return fmt.Errorf("schema nests deeper than %d levels", maxSchemaDepth)
			}
			open = append(open, n)
		default:
			if i == 0 {
				// A root without fields: parquet-go reads no rows.
				break
			}
			if !s.Type.Valid {
				return fmt.Errorf("schema element %d (%q) is a leaf without a type", i, s.Name)
			}
			leaves++
		}
		for len(open) > 0 && open[len(open)-1] == 0 {
			open = open[:len(open)-1]
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("schema ends with %d group(s) missing children", len(open))
	}
	if md.NumRows < 0 {
		return fmt.Errorf("the footer declares %d rows", md.NumRows)
	}
	for i := range md.RowGroups {
		g := &md.RowGroups[i]
		if len(g.Columns) != leaves {
			return fmt.Errorf("row group %d has %d column chunks, the schema %d columns", i, len(g.Columns), leaves)
		}
		if g.NumRows < 0 {
			return fmt.Errorf("row group %d declares %d rows", i, g.NumRows)
		}
		for j := range g.Columns {
			c := &g.Columns[j]
			if c.FilePath != "" {
				return fmt.Errorf("row group %d column %d lives in another file (%q); stampede reads single-file Parquet", i, j, c.FilePath)
			}
			if len(c.EncryptedColumnMetadata) > 0 {
				return fmt.Errorf("row group %d column %d is encrypted; encrypted Parquet files are not supported", i, j)
			}
			m := &c.MetaData
			start := m.DataPageOffset
			if m.DictionaryPageOffset > 0 && m.DictionaryPageOffset < start {
				start = m.DictionaryPageOffset
			}
			if start < 4 || m.TotalCompressedSize < 0 || m.TotalCompressedSize > footerAt-start {
				return fmt.Errorf("row group %d column %d declares %d bytes at offset %d, outside the file's %d bytes of pages", i, j, m.TotalCompressedSize, start, footerAt-4)
			}
			if m.NumValues < 0 {
				return fmt.Errorf("row group %d column %d declares %d values", i, j, m.NumValues)
			}
		}
	}
	return nil
}

// pageCheck checks the pages of column chunks before parquet-go reads
// them; it keeps its buffers and decoders across pages.
type pageCheck struct {
	r       io.ReaderAt
	levels  []leafLevels
	hdr     []byte
	scratch []byte
	out     []byte
	zstd    *zstd.Decoder
	gzip    *gzip.Reader
}

// chunk checks the pages of one column chunk, of a leaf with levels lv.
func (p *pageCheck) chunk(m *format.ColumnMetaData, lv leafLevels) error {
	pos := m.DataPageOffset
	if m.DictionaryPageOffset > 0 && m.DictionaryPageOffset < pos {
		pos = m.DictionaryPageOffset
	}
	end := pos + m.TotalCompressedSize
	ratio := maxRatio(m.Codec)
	var values, pageBytes int64
	for pos < end {
		h, n, err := p.header(pos, end)
		if err != nil {
			return fmt.Errorf("page at offset %d: %v", pos, err)
		}
		if err := checkPage(h, m.Codec, ratio, end-pos-int64(n)); err != nil {
			return fmt.Errorf("page at offset %d: %v", pos, err)
		}
		if h.Type == format.DataPage || h.Type == format.DataPageV2 {
			values += int64(max(h.DataPageHeader.V.NumValues, h.DataPageHeaderV2.V.NumValues))
			pageBytes += int64(h.UncompressedPageSize)
			if values > max(maxChunkNulls, 8*pageBytes) {
				return fmt.Errorf("pages up to offset %d declare %d values in %d bytes", pos, values, pageBytes)
			}
		}
		pos += int64(n)
		c := int64(h.CompressedPageSize)
		enc, numValues, delta := deltaEncoded(h)
		if (ratio > 1 || delta) && h.Type != format.IndexPage {
			at, size, limit := pos, c, int64(h.UncompressedPageSize)
			codec := m.Codec
			v2 := h.Type == format.DataPageV2
			if v2 {
				// Levels precede the values, never compressed.
				v := &h.DataPageHeaderV2.V
				levels := int64(v.RepetitionLevelsByteLength) + int64(v.DefinitionLevelsByteLength)
				at, size, limit = at+levels, size-levels, limit-levels
				if v.IsCompressed.Valid && !v.IsCompressed.V {
					codec = format.Uncompressed
				}
			}
			if size > 0 && (codec != format.Uncompressed || delta) {
				b, err := p.decoded(at, int(size), codec, limit, delta)
				if err == nil && delta {
					if !v2 {
						b, err = skipLevelsV1(b, lv)
					}
					if err == nil {
						err = checkDeltaHeader(b, enc, numValues)
					}
				}
				if err != nil {
					return fmt.Errorf("page at offset %d: %v", pos-int64(n), err)
				}
			}
		}
		pos += c
	}
	return nil
}

// header reads and decodes the page header at pos.
func (p *pageCheck) header(pos, end int64) (*format.PageHeader, int, error) {
	want := int64(4 << 10)
	for {
		n := min(want, end-pos)
		if cap(p.hdr) < int(n) {
			p.hdr = make([]byte, n)
		}
		b := p.hdr[:n]
		if _, err := p.r.ReadAt(b, pos); err != nil {
			return nil, 0, fmt.Errorf("reading the page header: %v", err)
		}
		used, err := skimThrift(b)
		if errors.Is(err, errShort) && n < end-pos && want < maxPageHeader {
			want *= 4
			continue
		}
		if errors.Is(err, errShort) && want >= maxPageHeader {
			return nil, 0, fmt.Errorf("the page header is longer than %d MiB", maxPageHeader>>20)
		}
		if err != nil {
			return nil, 0, fmt.Errorf("corrupt page header: %v", err)
		}
		h := new(format.PageHeader)
		if err := thrift.Unmarshal(new(thrift.CompactProtocol), b[:used], h); err != nil {
			return nil, 0, fmt.Errorf("corrupt page header: %v", err)
		}
		return h, used, nil
	}
}

// checkPage checks a page header's sizes and counts against the bytes
// that follow it in its column chunk (left) and the codec.
func checkPage(h *format.PageHeader, codec format.CompressionCodec, ratio, left int64) error {
	c, u := int64(h.CompressedPageSize), int64(h.UncompressedPageSize)
	if c < 0 || c > left {
		return fmt.Errorf("declares %d compressed bytes, but its column chunk has %d left", c, left)
	}
	if u < 0 || u > maxPageBytes {
		return fmt.Errorf("declares %d uncompressed bytes (at most %d MiB are read)", u, maxPageBytes>>20)
	}
	if ratio > 0 && u > c*ratio+ratioSlack {
		return fmt.Errorf("declares %d uncompressed bytes from %d compressed, more than %s can expand to", u, c, codec)
	}
	values := int64(0)
	switch h.Type {
	case format.DataPage:
		if !h.DataPageHeader.Valid {
			return errors.New("data page without its header")
		}
		values = int64(h.DataPageHeader.V.NumValues)
	case format.DataPageV2:
		if !h.DataPageHeaderV2.Valid {
			return errors.New("data page (v2) without its header")
		}
		v := &h.DataPageHeaderV2.V
		values = int64(v.NumValues)
		if v.NumNulls < 0 || v.NumNulls > v.NumValues || v.NumRows < 0 || v.NumRows > v.NumValues {
			return fmt.Errorf("declares %d values, %d nulls and %d rows", v.NumValues, v.NumNulls, v.NumRows)
		}
		lv := int64(v.RepetitionLevelsByteLength) + int64(v.DefinitionLevelsByteLength)
		if v.RepetitionLevelsByteLength < 0 || v.DefinitionLevelsByteLength < 0 || lv > c || lv > u {
			return fmt.Errorf("declares %d bytes of levels in a page of %d", lv, c)
		}
	case format.DictionaryPage:
		if !h.DictionaryPageHeader.Valid {
			return errors.New("dictionary page without its header")
		}
		values = int64(h.DictionaryPageHeader.V.NumValues)
		// A dictionary holds its values plainly: a bit each at least.
		if values > 8*u+8 {
			return fmt.Errorf("declares a dictionary of %d values in %d bytes", values, u)
		}
	case format.IndexPage:
	default:
		return fmt.Errorf("unknown page type %d", h.Type)
	}
	if values < 0 || values > maxPageValues {
		return fmt.Errorf("declares %d values (at most %d are read per page)", values, maxPageValues)
	}
	return nil
}

// decoded checks that the n compressed bytes at pos decode to at most
// limit bytes, as parquet-go's decoders will find them, and returns the
// decoded bytes when want (else nil); they live until the next call.
func (p *pageCheck) decoded(pos int64, n int, codec format.CompressionCodec, limit int64, want bool) ([]byte, error) {
	if cap(p.scratch) < n {
		p.scratch = make([]byte, n)
	}
	src := p.scratch[:n]
	if _, err := p.r.ReadAt(src, pos); err != nil {
		return nil, fmt.Errorf("reading the page: %v", err)
	}
	switch codec {
	case format.Uncompressed:
		return src, nil
	case format.Snappy:
		// The block starts with its decoded length, which the decoder
		// allocates.
		d, k := binary.Uvarint(src)
		if k <= 0 {
			return nil, errors.New("corrupt snappy block")
		}
		if d > uint64(limit) {
			return nil, fmt.Errorf("its snappy block decodes to %d bytes, the page declares %d", d, limit)
		}
		if !want {
			return nil, nil
		}
		out, err := snappy.Decode(p.out[:cap(p.out)], src)
		if err != nil {
			return nil, fmt.Errorf("corrupt snappy block: %v", err)
		}
		p.out = out[:0]
		return out, nil
	case format.Lz4Raw:
		// parquet-go's LZ4 decoder retries a failing block with twice the
		// room, without end; one that fails in room for the declared
		// size is refused here.
		if cap(p.out) < int(max(limit, 3*int64(n))) {
			p.out = make([]byte, max(limit, 3*int64(n)))
		}
		k, err := lz4.UncompressBlock(src, p.out[:max(limit, 3*int64(n))])
		if err != nil {
			return nil, fmt.Errorf("corrupt LZ4 block, or one larger than the %d bytes declared: %v", limit, err)
		}
		// parquet-go v0.32.0 decodes an LZ4 page into a new buffer when
		// the pooled one is shorter than 3 × the compressed bytes, and
		// then keeps reading the old one: such a page comes back as
		// zeros with no error. A page declaring less than 3:1 may meet
		// that (the pool's buffers vary), so it is refused rather than
		// read wrong; at 3:1 or more the pooled buffer always has room.
		if limit < 3*int64(n) {
			return nil, fmt.Errorf("LZ4_RAW page of %d bytes declares %d uncompressed, less than 3:1, which the Parquet reader (parquet-go v0.32.0) can return as zeros; re-save the file with snappy or zstd", n, limit)
		}
		return p.out[:k], nil
	case format.Zstd:
		if p.zstd == nil {
			d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecodeAllCapLimit(true), zstd.WithDecoderMaxWindow(maxPageBytes))
			if err != nil {
				return nil, err
			}
			p.zstd = d
		}
		// With a cap limit, frames declaring more than cap(dst) are refused
		// before anything is allocated for them.
		if cap(p.out) < int(limit) {
			p.out = make([]byte, 0, limit)
		}
		out, err := p.zstd.DecodeAll(src, p.out[:0:limit])
		if err != nil {
			return nil, fmt.Errorf("its zstd data does not decode within the %d bytes declared: %v", limit, err)
		}
		return out, nil
	case format.Gzip:
		var err error
		if p.gzip == nil {
			p.gzip, err = gzip.NewReader(bytes.NewReader(src))
		} else {
			err = p.gzip.Reset(bytes.NewReader(src))
		}
		if err != nil {
			return nil, fmt.Errorf("corrupt gzip data: %v", err)
		}
		return p.streamWithin(p.gzip, "gzip", limit, want)
	case format.Brotli:
		return p.streamWithin(brotli.NewReader(bytes.NewReader(src)), "brotli", limit, want)
	}
	return nil, nil
}

// streamWithin reads r to its end, failing past limit bytes.
func (p *pageCheck) streamWithin(r io.Reader, codec string, limit int64, want bool) ([]byte, error) {
	var got int64
	var err error
	var out []byte
	if want {
		var b bytes.Buffer
		got, err = b.ReadFrom(io.LimitReader(r, limit+1))
		out = b.Bytes()
	} else {
		got, err = io.Copy(io.Discard, io.LimitReader(r, limit+1))
	}
	if err != nil {
		return nil, fmt.Errorf("corrupt %s data: %v", codec, err)
	}
	if got > limit {
		return nil, fmt.Errorf("its %s data decodes to more than the %d bytes declared", codec, limit)
	}
	return out, nil
}

// deltaEncoded says whether a data page's values start with a
// DELTA_BINARY_PACKED header (the values, or their lengths or prefix
// lengths), whose value count parquet-go allocates for.
func deltaEncoded(h *format.PageHeader) (enc format.Encoding, numValues int32, ok bool) {
	switch {
	case h.Type == format.DataPage && h.DataPageHeader.Valid:
		enc, numValues = h.DataPageHeader.V.Encoding, h.DataPageHeader.V.NumValues
	case h.Type == format.DataPageV2 && h.DataPageHeaderV2.Valid:
		enc, numValues = h.DataPageHeaderV2.V.Encoding, h.DataPageHeaderV2.V.NumValues
	default:
		return 0, 0, false
	}
	switch enc {
	case format.DeltaBinaryPacked, format.DeltaLengthByteArray, format.DeltaByteArray:
		return enc, numValues, true
	}
	return 0, 0, false
}

// checkDeltaHeader checks the value count of the DELTA_BINARY_PACKED
// header at the start of b against the page's values.
func checkDeltaHeader(b []byte, enc format.Encoding, numValues int32) error {
	var v [3]uint64
	for i := range v {
		x, k := binary.Uvarint(b)
		if k <= 0 {
			return fmt.Errorf("corrupt %s header", enc)
		}
		v[i], b = x, b[k:]
	}
	if v[2] > uint64(numValues) {
		return fmt.Errorf("its %s header declares %d values in a page of %d", enc, v[2], numValues)
	}
	return nil
}

// skipLevelsV1 skips the repetition and definition levels that precede
// a v1 data page's values (each with its 4-byte length, as parquet-go
// reads them).
func skipLevelsV1(b []byte, lv leafLevels) ([]byte, error) {
	for _, present := range []bool{lv.rep > 0, lv.def > 0} {
		if !present {
			continue
		}
		if len(b) < 4 {
			return nil, errors.New("truncated levels")
		}
		n := uint64(binary.LittleEndian.Uint32(b))
		if n > uint64(len(b)-4) {
			return nil, errors.New("levels longer than the page")
		}
		b = b[4+n:]
	}
	return b, nil
}

// leafLevels are a leaf column's highest repetition and definition
// levels.
type leafLevels struct{ rep, def int }

// schemaLevels returns each leaf's levels in column order; the schema
// passed checkMetadata.
func schemaLevels(md *format.FileMetaData) []leafLevels {
	var out []leafLevels
	type open struct {
		left int32
		lv   leafLevels
	}
	var stack []open
	for i := range md.Schema {
		s := &md.Schema[i]
		lv := leafLevels{}
		if len(stack) > 0 {
			lv = stack[len(stack)-1].lv
			stack[len(stack)-1].left--
		}
		if i > 0 && s.RepetitionType.Valid {
			switch s.RepetitionType.V {
			case format.Optional:
				lv.def++
			case format.Repeated:
				lv.def++
				lv.rep++
			}
		}
		if s.NumChildren.Valid && s.NumChildren.V > 0 {
			stack = append(stack, open{s.NumChildren.V, lv})
		} else if i > 0 {
			out = append(out, lv)
		}
		for len(stack) > 0 && stack[len(stack)-1].left == 0 {
			stack = stack[:len(stack)-1]
		}
	}
	return out
}

// errShort: the bytes end inside the thrift value.
var errShort = errors.New("truncated")

// skimThrift walks one thrift compact-protocol struct in b without
// building it, checking that every length and count fits in the bytes
// left (each element takes one byte at least), within the limits above,
// and returns its length.
func skimThrift(b []byte) (int, error) {
	s := skimmer{b: b}
	if err := s.value(12, 0); err != nil {
		return 0, err
	}
	return s.at, nil
}

type skimmer struct {
	b       []byte
	at      int
	structs int
}

func (s *skimmer) byte() (byte, error) {
	if s.at >= len(s.b) {
		return 0, errShort
	}
	s.at++
	return s.b[s.at-1], nil
}

func (s *skimmer) uvarint() (uint64, error) {
	v, n := binary.Uvarint(s.b[s.at:])
	switch {
	case n == 0:
		return 0, errShort
	case n < 0:
		return 0, errors.New("varint overflows 64 bits")
	}
	s.at += n
	return v, nil
}

// count reads a container or binary length and checks it against the
// bytes left.
func (s *skimmer) count(what string, n uint64, max uint64) (int, error) {
	left := uint64(len(s.b) - s.at)
	if n > max {
		return 0, fmt.Errorf("%s of %d, more than %d", what, n, max)
	}
	if n > left {
		// Past the end of the bytes given: too long, or cut short.
		return 0, errShort
	}
	return int(n), nil
}

func (s *skimmer) skip(n int) error {
	if n > len(s.b)-s.at {
		return errShort
	}
	s.at += n
	return nil
}

// value skims one value of compact type t.
func (s *skimmer) value(t byte, depth int) error {
	switch t {
	case 1, 2, 3: // bool (a byte in a container), byte
		return s.skip(1)
	case 4, 5, 6: // i16, i32, i64
		_, err := s.uvarint()
		return err
	case 7: // double
		return s.skip(8)
	case 8: // binary
		v, err := s.uvarint()
		if err != nil {
			return err
		}
		n, err := s.count("binary", v, maxPageBytes)
		if err != nil {
			return err
		}
		return s.skip(n)
	case 9, 10: // list, set
		return s.list(depth)
	case 11:
		return s.mapValue(depth)
	case 12:
		return s.structValue(depth)
	}
	return fmt.Errorf("unknown thrift type %d", t)
}

func (s *skimmer) structValue(depth int) error {
	if depth >= maxThriftDepth {
		return fmt.Errorf("thrift values nest deeper than %d", maxThriftDepth)
	}
	for {
		h, err := s.byte()
		if err != nil {
			return err
		}
		if h == 0 {
			return nil
		}
		if h>>4 == 0 {
			if _, err := s.uvarint(); err != nil { // long field id
				return err
			}
		}
		t := h & 0x0F
		if t == 1 || t == 2 {
			continue // the bool is in the type
		}
		if err := s.value(t, depth+1); err != nil {
			return err
		}
	}
}

func (s *skimmer) list(depth int) error {
	if depth >= maxThriftDepth {
		return fmt.Errorf("thrift values nest deeper than %d", maxThriftDepth)
	}
	h, err := s.byte()
	if err != nil {
		return err
	}
	size := uint64(h >> 4)
	if size == 15 {
		if size, err = s.uvarint(); err != nil {
			return err
		}
	}
	n, err := s.count("list", size, maxContainer)
	if err != nil {
		return err
	}
	t := h & 0x0F
	if t == 12 {
		if s.structs += n; s.structs > maxStructs {
			return fmt.Errorf("more than %d structs", maxStructs)
		}
	}
	for range n {
		if err := s.value(t, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (s *skimmer) mapValue(depth int) error {
	if depth >= maxThriftDepth {
		return fmt.Errorf("thrift values nest deeper than %d", maxThriftDepth)
	}
	size, err := s.uvarint()
	if err != nil {
		return err
	}
	n, err := s.count("map", size, maxContainer)
	if err != nil || n == 0 {
		return err
	}
	kv, err := s.byte()
	if err != nil {
		return err
	}
	for range n {
		if err := s.value(kv>>4, depth+1); err != nil {
			return err
		}
		if err := s.value(kv&0x0F, depth+1); err != nil {
			return err
		}
	}
	return nil
}
