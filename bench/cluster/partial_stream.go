package cluster

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/stampede-bench/stampede/metrics"
)

// The partial format, version 4 (docs/cluster.md "The partial file"): a
// prelude, then sections, each a chunk of records, so that a partial is
// written and read one chunk at a time.
//
//	prelude
//	  magic          "stampede-partial\n"
//	  version        uvarint (4)
//	  record version uvarint (metrics.RecordVersion: the records' encoding)
//	  header         uvarint length, then that many bytes of JSON (PartialHeader)
//	sections, each
//	  kind           one byte: 'r' records, 'p' probes, 'e' the end
//	  payload        uvarint length, then that many bytes
//
// A records or probes section holds whole items, each a record and the
// facts the merge reads beside it:
//
//	record         uvarint length, then the record as metrics.AppendRecord
//	               encodes it (index, times on the shared clock, every gap, …)
//	expected       uvarint, the dataset's output length
//	request id     uvarint tag: 0 the header's RequestIDPrefix and the
//	               record's index in decimal (none when the header has no
//	               prefix), 1 none, n ≥ 2 the n − 2 bytes that follow
//	audio          8 bytes, float64 bits little-endian, only with
//	               Settings.AudioSeconds
//
// Every records section comes before every probes section (agent 0's side
// probes), and the end section, last, counts the records and the probes
// (two uvarints), so that a stream cut between two sections is not taken
// for a whole one. A file (--save-partial) is the gzip stream of the
// prelude and the sections as above; over the cluster's connection the
// prelude and each section are one authenticated frame each (protocol.go).

// Section kinds.
const (
	sectionRecords = 'r'
	sectionProbes  = 'p'
	sectionEnd     = 'e'
)

// The bounds of the stream. A section holds about partialChunkBytes of
// records, or one record larger than that: maxPartialSection holds a
// stream of some 20 million token events, or 60 MB of generated text;
// a larger record is an error on the writer's side, naming it. A header
// holds every connection's RTT and the servers' messages.
const (
	partialChunkBytes = 256 << 10
	maxPartialSection = 64 << 20
	maxPartialHeader  = 64 << 20
	// maxPartialProbes bounds the side probes one partial holds (a day
	// of one probe a second is 86,400): they are kept in memory.
	maxPartialProbes = 1 << 20
)

// Request id tags.
const (
	idDerived = 0
	idNone    = 1
	idOwn     = 2
)

// partialSink takes a partial's stream: its prelude, then each section.
type partialSink interface {
	prelude(b []byte) error
	section(kind byte, payload []byte) error
}

// writePartialStream writes p to sink, a chunk of records at a time, and
// returns how many records it wrote.
func writePartialStream(sink partialSink, p *Partial) (int, error) {
	header, err := json.Marshal(&p.Header)
	if err != nil {
		return 0, fmt.Errorf("partial header: %w", err)
	}
	pre := []byte(partialMagic)
	pre = binary.AppendUvarint(pre, PartialVersion)
	pre = binary.AppendUvarint(pre, metrics.RecordVersion)
	pre = binary.AppendUvarint(pre, uint64(len(header)))
	pre = append(pre, header...)
	if err := sink.prelude(pre); err != nil {
		return 0, err
	}
	w := itemWriter{prefix: p.Header.RequestIDPrefix, audio: p.Header.Settings.AudioSeconds, sink: sink}
	if p.Records != nil {
		if err := p.Records(func(rec *PartialRecord) bool { return w.add(sectionRecords, rec) == nil }); err != nil {
			return w.items, fmt.Errorf("partial: reading the records: %w", err)
		}
	}
	records := w.items
	if err := w.flush(sectionRecords); err != nil {
		return records, err
	}
	var probe PartialRecord
	for i := range p.Probes {
		probe.RequestResult = p.Probes[i]
		if err := w.add(sectionProbes, &probe); err != nil {
			return records, err
		}
	}
	if err := w.flush(sectionProbes); err != nil {
		return records, err
	}
	end := binary.AppendUvarint(nil, uint64(records))
	end = binary.AppendUvarint(end, uint64(len(p.Probes)))
	return records, sink.section(sectionEnd, end)
}

// itemWriter gathers items into sections of about partialChunkBytes.
type itemWriter struct {
	prefix string
	audio  bool
	sink   partialSink
	chunk  []byte
	rec    []byte
	digits []byte
	items  int // records added, of every section kind
	err    error
}

func (w *itemWriter) add(kind byte, r *PartialRecord) error {
	if w.err != nil {
		return w.err
	}
	w.rec = metrics.AppendRecord(w.rec[:0], &r.RequestResult)
	mark := len(w.chunk)
	w.chunk = binary.AppendUvarint(w.chunk, uint64(len(w.rec)))
	w.chunk = append(w.chunk, w.rec...)
	w.chunk = binary.AppendUvarint(w.chunk, uint64(max(r.ExpectedOutputLen, 0)))
	switch {
	case w.derived(r.RequestID, r.Index):
		w.chunk = binary.AppendUvarint(w.chunk, idDerived)
	case r.RequestID == "":
		w.chunk = binary.AppendUvarint(w.chunk, idNone)
	default:
		w.chunk = binary.AppendUvarint(w.chunk, uint64(idOwn+len(r.RequestID)))
		w.chunk = append(w.chunk, r.RequestID...)
	}
	if w.audio {
		w.chunk = binary.LittleEndian.AppendUint64(w.chunk, math.Float64bits(r.AudioSec))
	}
	if kind == sectionRecords {
		w.items++
	}
	switch size := len(w.chunk) - mark; {
	case size > maxPartialSection:
		w.err = fmt.Errorf("partial: request %d's record takes %d bytes, more than a partial's section holds (%d)", r.Index, size, maxPartialSection)
	case len(w.chunk) > maxPartialSection:
		// The item goes into a section of its own.
		item := bytes.Clone(w.chunk[mark:])
		w.chunk = w.chunk[:mark]
		if w.err = w.flush(kind); w.err == nil {
			w.chunk = append(w.chunk, item...)
		}
	case len(w.chunk) >= partialChunkBytes:
		w.err = w.flush(kind)
	}
	return w.err
}

// derived reports whether id is the prefix and index in decimal, or none
// without a prefix.
func (w *itemWriter) derived(id string, index int) bool {
	if w.prefix == "" {
		return id == ""
	}
	if len(id) <= len(w.prefix) || id[:len(w.prefix)] != w.prefix {
		return false
	}
	w.digits = strconv.AppendInt(w.digits[:0], int64(index), 10)
	return id[len(w.prefix):] == string(w.digits)
}

func (w *itemWriter) flush(kind byte) error {
	if w.err != nil || len(w.chunk) == 0 {
		return w.err
	}
	err := w.sink.section(kind, w.chunk)
	w.chunk = w.chunk[:0]
	return err
}

// fileSink writes a partial file: the gzip stream of the prelude and the
// sections.
type fileSink struct {
	w    *bufio.Writer
	head []byte
}

func (s *fileSink) prelude(b []byte) error {
	_, err := s.w.Write(b)
	return err
}

func (s *fileSink) section(kind byte, payload []byte) error {
	s.head = append(s.head[:0], kind)
	s.head = binary.AppendUvarint(s.head, uint64(len(payload)))
	if _, err := s.w.Write(s.head); err != nil {
		return err
	}
	_, err := s.w.Write(payload)
	return err
}

// WritePartial writes p to w as a partial file (gzip-compressed), a chunk
// of records at a time.
func WritePartial(w io.Writer, p *Partial) error {
	zw := gzip.NewWriter(w)
	sink := &fileSink{w: bufio.NewWriterSize(zw, 64<<10)}
	if _, err := writePartialStream(sink, p); err != nil {
		return err
	}
	if err := sink.w.Flush(); err != nil {
		return err
	}
	return zw.Close()
}

// PartialError names what is wrong in a partial's bytes.
type PartialError struct {
	Part string // "magic", "header", "record 12", …
	What string
}

func (e *PartialError) Error() string { return "malformed partial: " + e.Part + ": " + e.What }

// partialSource gives a partial's sections in turn.
type partialSource interface {
	// next returns the next section; its payload is valid until the
	// following call.
	next() (kind byte, payload []byte, err error)
}

// fileSource reads the sections of a partial file after its prelude.
type fileSource struct {
	r   *bufio.Reader
	buf []byte
}

func (s *fileSource) next() (byte, []byte, error) {
	kind, err := s.r.ReadByte()
	if err != nil {
		return 0, nil, cutShort(err)
	}
	n, err := binary.ReadUvarint(s.r)
	if err != nil {
		return 0, nil, cutShort(err)
	}
	if n > maxPartialSection {
		return 0, nil, &PartialError{Part: "section", What: fmt.Sprintf("a section of %d bytes (at most %d)", n, maxPartialSection)}
	}
	// Grown as the bytes come, not allocated ahead of them.
	s.buf = s.buf[:0]
	for int(n) > len(s.buf) {
		step := min(int(n)-len(s.buf), 1<<20)
		s.buf = append(s.buf, make([]byte, step)...)
		if _, err := io.ReadFull(s.r, s.buf[len(s.buf)-step:]); err != nil {
			return 0, nil, cutShort(err)
		}
	}
	return kind, s.buf, nil
}

// cutShort is a stream that ended inside a partial.
func cutShort(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &PartialError{Part: "end", What: "the partial is cut short (its end section is missing)"}
	}
	return fmt.Errorf("partial: %w", err)
}

// A PartialReader reads a partial a record at a time: its header when
// opened, then each record (Next), then its probes. It holds one section
// of records at a time, never the partial.
type PartialReader struct {
	Header PartialHeader
	// Version is the partial's format version.
	Version int
	// Probes are the side probes' results, read once Next has returned
	// io.EOF.
	Probes []metrics.RequestResult

	path   string         // the file read, for errors; "" for none
	src    partialSource  // version 4
	legacy *legacyRecords // versions 2 and 3
	close  func() error
	dec    metrics.RecordDecoder
	rec    PartialRecord
	raw    []byte // the last record's encoding (version 4)
	idTag  uint64 // its request id's tag, idOwn + its length for an id of its own
	idOwn  []byte
	chunk  []byte // what is left of the records section being read
	probes bool   // the probes' sections have begun
	read   int    // records read
	err    error
	done   bool
}

// OpenPartial reads a partial file's header from r (the gzip stream
// WritePartial writes); its records are then read by Next.
func OpenPartial(r io.Reader) (*PartialReader, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("partial: not a gzip stream: %w", err)
	}
	br := bufio.NewReaderSize(zr, 64<<10)
	p, err := readPrelude(br)
	if err != nil {
		return nil, err
	}
	if p.Version < 4 {
		p.legacy = newLegacyRecords(br, &p.Header)
	} else {
		p.src = &fileSource{r: br}
	}
	p.close = func() error {
		// Whatever follows the end must be nothing: a second stream, or
		// bytes after it, is not this partial.
		if _, err := br.ReadByte(); err != io.EOF {
			return &PartialError{Part: "end", What: "bytes after the partial's end"}
		}
		return nil
	}
	return p, nil
}

// streamReader is both an io.Reader and an io.ByteReader.
type streamReader interface {
	io.Reader
	io.ByteReader
}

// readPrelude reads a partial's magic, version and header.
func readPrelude(r streamReader) (*PartialReader, error) {
	magic := make([]byte, len(partialMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != partialMagic {
		return nil, &PartialError{Part: "magic", What: "not a stampede partial result"}
	}
	v, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, &PartialError{Part: "version", What: "truncated or overlong varint"}
	}
	if v < oldestPartialVersion || v > PartialVersion {
		return nil, &PartialError{Part: "version", What: fmt.Sprintf("version %d; this stampede reads versions %d to %d: "+
			"merge it with the stampede that wrote it, or run the agents again with this one", v, oldestPartialVersion, PartialVersion)}
	}
	p := &PartialReader{Version: int(v)}
	if v >= 4 {
		rv, err := binary.ReadUvarint(r)
		if err != nil || rv != metrics.RecordVersion {
			return nil, &PartialError{Part: "record version", What: fmt.Sprintf("records of encoding %d; this stampede reads %d", rv, metrics.RecordVersion)}
		}
	}
	n, err := binary.ReadUvarint(r)
	if err != nil || n > maxPartialHeader {
		return nil, &PartialError{Part: "header", What: fmt.Sprintf("a header of %d bytes (at most %d), or none", n, maxPartialHeader)}
	}
	header := make([]byte, 0, min(n, 64<<10))
	if header, err = readGrowing(r, header, int(n)); err != nil {
		return nil, &PartialError{Part: "header", What: "cut short"}
	}
	dec := json.NewDecoder(bytes.NewReader(header))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p.Header); err != nil {
		return nil, &PartialError{Part: "header", What: err.Error()}
	}
	h := &p.Header
	if h.NumRequests < 0 || h.ClusterSize < 1 || h.ClusterIndex < 0 || h.ClusterIndex >= h.ClusterSize {
		return nil, &PartialError{Part: "header", What: fmt.Sprintf("cluster index %d of size %d over %d requests", h.ClusterIndex, h.ClusterSize, h.NumRequests)}
	}
	return p, nil
}

// readGrowing reads n bytes into b, growing it as they arrive.
func readGrowing(r io.Reader, b []byte, n int) ([]byte, error) {
	for len(b) < n {
		step := min(n-len(b), 1<<20)
		b = append(b, make([]byte, step)...)
		if _, err := io.ReadFull(r, b[len(b)-step:]); err != nil {
			return b, err
		}
	}
	return b, nil
}

// Next returns the next record, valid until the following call (its
// arrays too); io.EOF once every record is read, the probes then in
// Probes. Any other error ends the reading: the partial is malformed or
// cut short.
func (p *PartialReader) Next() (*PartialRecord, error) {
	if err := p.next(); err != nil {
		return nil, err
	}
	switch {
	case p.legacy != nil:
	case p.idTag == idDerived && p.Header.RequestIDPrefix != "":
		p.rec.RequestID = p.Header.RequestIDPrefix + strconv.Itoa(p.rec.Index)
	case p.idTag == idDerived, p.idTag == idNone:
		p.rec.RequestID = ""
	default:
		p.rec.RequestID = string(p.idOwn)
	}
	return &p.rec, nil
}

// next reads the next record into p.rec (its request id left to the
// caller: p.idTag and p.idOwn say it), its encoding into p.raw.
func (p *PartialReader) next() error {
	if p.err != nil {
		return p.err
	}
	if p.done {
		return io.EOF
	}
	var err error
	if p.legacy != nil {
		err = p.legacy.next(&p.rec)
		if err == io.EOF {
			p.Probes, err = p.legacy.probes()
			if err == nil {
				err = p.finish()
			}
		}
		p.raw = nil
	} else {
		err = p.nextItem()
	}
	switch {
	case err == nil:
		p.read++
	case err == io.EOF:
		p.done = true
	default:
		p.err = err
	}
	return err
}

// finish checks what follows the last section.
func (p *PartialReader) finish() error {
	if p.close != nil {
		if err := p.close(); err != nil {
			return err
		}
	}
	return io.EOF
}

// nextItem reads a version-4 record, going on to the next section when
// the one read is spent.
func (p *PartialReader) nextItem() error {
	for len(p.chunk) == 0 {
		kind, payload, err := p.src.next()
		if err != nil {
			return err
		}
		switch kind {
		case sectionRecords:
			if p.probes {
				return &PartialError{Part: "section", What: "records after the probes"}
			}
			p.chunk = payload
		case sectionProbes:
			p.probes = true
			if err := p.readProbes(payload); err != nil {
				return err
			}
		case sectionEnd:
			return p.end(payload)
		default:
			return &PartialError{Part: "section", What: fmt.Sprintf("a section of kind %q", kind)}
		}
	}
	rest, err := p.item(p.chunk, "record "+strconv.Itoa(p.read))
	if err != nil {
		return err
	}
	if p.rec.Index >= p.Header.NumRequests {
		return &PartialError{Part: "record " + strconv.Itoa(p.read), What: fmt.Sprintf("request %d of a run of %d", p.rec.Index, p.Header.NumRequests)}
	}
	if p.read >= p.Header.NumRequests {
		return &PartialError{Part: "record " + strconv.Itoa(p.read), What: fmt.Sprintf("more records than the run's %d requests", p.Header.NumRequests)}
	}
	p.chunk = rest
	return nil
}

// item reads one item of a section into p.rec, p.raw and the id's tag,
// and returns what follows it; part names it in errors.
func (p *PartialReader) item(b []byte, part string) ([]byte, error) {
	bad := func(what string) ([]byte, error) { return nil, &PartialError{Part: part, What: what} }
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return bad("a record's length runs past its section")
	}
	p.raw, b = b[k:k+int(n)], b[k+int(n):]
	audio, id := p.rec.AudioSec, p.rec.RequestID
	if err := p.dec.Decode(p.raw, &p.rec.RequestResult); err != nil {
		return bad(err.Error())
	}
	p.rec.AudioSec, p.rec.RequestID = audio, id
	expected, k := binary.Uvarint(b)
	if k <= 0 || expected > math.MaxInt32 {
		return bad("a bad expected output length")
	}
	p.rec.ExpectedOutputLen, b = int(expected), b[k:]
	tag, k := binary.Uvarint(b)
	if k <= 0 || tag >= idOwn && tag-idOwn > uint64(len(b)-k) {
		return bad("a bad request id")
	}
	p.idTag, b = tag, b[k:]
	if tag >= idOwn {
		p.idOwn, b = b[:tag-idOwn], b[tag-idOwn:]
	}
	if p.Header.Settings.AudioSeconds {
		if len(b) < 8 {
			return bad("the audio duration is cut short")
		}
		p.rec.AudioSec, b = math.Float64frombits(binary.LittleEndian.Uint64(b)), b[8:]
	}
	return b, nil
}

// readProbes reads a probes section.
func (p *PartialReader) readProbes(b []byte) error {
	for len(b) > 0 {
		if len(p.Probes) >= maxPartialProbes {
			return &PartialError{Part: "probes", What: fmt.Sprintf("more than %d", maxPartialProbes)}
		}
		rest, err := p.item(b, "probe "+strconv.Itoa(len(p.Probes)))
		if err != nil {
			return err
		}
		p.Probes = append(p.Probes, p.rec.RequestResult.Clone())
		b = rest
	}
	return nil
}

// end checks the end section's counts against what was read.
func (p *PartialReader) end(b []byte) error {
	records, k := binary.Uvarint(b)
	if k <= 0 {
		return &PartialError{Part: "end", What: "a bad count of records"}
	}
	probes, j := binary.Uvarint(b[k:])
	if j <= 0 || k+j != len(b) {
		return &PartialError{Part: "end", What: "a bad count of probes"}
	}
	if records != uint64(p.read) || probes != uint64(len(p.Probes)) {
		return &PartialError{Part: "end", What: fmt.Sprintf("%d records and %d probes read, the end counts %d and %d: sections are missing",
			p.read, len(p.Probes), records, probes)}
	}
	return p.finish()
}

// ReadPartialRecords reads every record of p, for tests and small
// partials: the records and the probes, copies that share nothing with
// the reader.
func ReadPartialRecords(p *PartialReader) ([]PartialRecord, error) {
	var out []PartialRecord
	for {
		rec, err := p.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		c := *rec
		c.RequestResult = rec.RequestResult.Clone()
		out = append(out, c)
	}
}
