package metrics

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"os"
	"slices"
	"sync"
	"sync/atomic"
)

// The record log: where a run's finished requests go, so that what a run
// holds in memory follows its load, not its length (DESIGN.md, "Memory
// follows the load"). Each shard's Recorder encodes a request's record at
// its end into the shard's current chunk; full chunks go to one spool
// goroutine, which appends them to a chunkStore (memory up to a bound,
// then a file). After the run, Sort orders the records by request into a
// Log, which every statistic, output and merge reads in passes.
//
//	shard ── Recorder.finish ── LogWriter.append (encode into its chunk)
//	           │ full chunk (one channel send per ChunkBytes)
//	           ▼
//	spool goroutine ── chunkStore (frames: memory, then a file)
//	           │ after the run: Sort (bucket by index, sort each bucket)
//	           ▼
//	Log (records in request order) ── All(): decode one record at a time

// LogConfig says where a run's record log lives.
type LogConfig struct {
	// Dir holds the log's files: os.TempDir() when empty. The files are
	// unlinked as soon as they are made.
	Dir string
	// MemoryBytes is how much of a log stays in memory before it goes to
	// a file; 0 is DefaultLogMemory, < 0 none (every frame to the file).
	MemoryBytes int64
	// ChunkBytes is the size of a shard's chunk; 0 is DefaultChunkBytes.
	ChunkBytes int
	// BucketBytes bounds the records Sort holds at once; 0 is
	// DefaultBucketBytes.
	BucketBytes int64
	// OnError is told of the first error writing the log (a full disk),
	// from the spool's goroutine; the run then stops as after Ctrl-C, and
	// the records still go to memory.
	OnError func(error)
	// File, when set, makes the log's files instead of a temporary file
	// in Dir (tests give files that fail).
	File func(dir string) (LogFile, error)
}

// The log's sizes. A chunk of 256 KiB holds about 4,000 records of short
// streams; a run of up to 8 MiB of records never touches the disk.
const (
	DefaultLogMemory   = 8 << 20
	DefaultChunkBytes  = 256 << 10
	DefaultBucketBytes = 32 << 20
	maxSortBuckets     = 512
)

func (c LogConfig) withDefaults() LogConfig {
	if c.MemoryBytes == 0 {
		c.MemoryBytes = DefaultLogMemory
	}
	if c.MemoryBytes < 0 {
		c.MemoryBytes = 0
	}
	if c.ChunkBytes <= 0 {
		c.ChunkBytes = DefaultChunkBytes
	}
	if c.BucketBytes <= 0 {
		c.BucketBytes = DefaultBucketBytes
	}
	if c.Dir == "" {
		c.Dir = os.TempDir()
	}
	return c
}

// A Spool gathers the records of one run from its shards' LogWriters.
type Spool struct {
	cfg   LogConfig
	raw   *chunkStore
	in    chan sealed
	free  chan []byte
	done  chan struct{}
	once  sync.Once
	stats logGauges
}

type sealed struct {
	frame   []byte
	records int
	synced  chan struct{} // a sync marker, no frame: closed once the frames before it are in the store
}

// logGauges count the memory the log's writing side holds.
type logGauges struct {
	buffers    atomic.Int64 // chunk bytes allocated, in use or free
	peak       atomic.Int64
	allocated  atomic.Int64 // chunks allocated
	sentFrames atomic.Int64
}

func (g *logGauges) grow(n int) {
	v := g.buffers.Add(int64(n))
	for {
		p := g.peak.Load()
		if v <= p || g.peak.CompareAndSwap(p, v) {
			break
		}
	}
	g.allocated.Add(1)
}

// NewSpool starts a run's spool.
func NewSpool(cfg LogConfig) *Spool {
	cfg = cfg.withDefaults()
	s := &Spool{
		cfg:  cfg,
		in:   make(chan sealed, 64),
		free: make(chan []byte, 16),
		done: make(chan struct{}),
	}
	s.raw = newChunkStore(cfg.Dir, cfg.MemoryBytes, cfg.OnError)
	s.raw.create = cfg.File
	go s.write()
	return s
}

// write is the spool's goroutine: frames to the store, in arrival order,
// their chunks back to the free list once the store has copied or kept
// them.
func (s *Spool) write() {
	defer close(s.done)
	for c := range s.in {
		if c.synced != nil {
			close(c.synced)
			continue
		}
		s.stats.sentFrames.Add(1)
		if s.raw.append(c.frame, c.records) {
			// The store kept the chunk itself: it is not free.
			s.stats.buffers.Add(-int64(cap(c.frame)))
			continue
		}
		select {
		case s.free <- c.frame[:0]:
		default:
			s.stats.buffers.Add(-int64(cap(c.frame)))
		}
	}
}

// Writer returns a new LogWriter feeding the spool; each shard has its
// own, used by its thread alone.
func (s *Spool) Writer() *LogWriter {
	return &LogWriter{spool: s}
}

// Close waits until every chunk handed over is in the store. Every
// LogWriter must have been flushed.
func (s *Spool) Close() error {
	s.once.Do(func() { close(s.in) })
	<-s.done
	return s.raw.Err()
}

// Err returns the first error writing the log.
func (s *Spool) Err() error { return s.raw.Err() }

// sync waits until every chunk handed over so far is in the store.
func (s *Spool) sync() {
	done := make(chan struct{})
	s.in <- sealed{synced: done}
	<-done
}

// LogMemory is what a log holds in memory: the writers' chunks and what
// the stores keep in memory, now and at the most.
type LogMemory struct {
	BufferBytes, PeakBufferBytes int64
	StoreMemoryBytes             int64
	DiskBytes                    int64
}

// Memory reports the spool's memory.
func (s *Spool) Memory() LogMemory {
	disk, mem := s.raw.size()
	return LogMemory{BufferBytes: s.stats.buffers.Load(), PeakBufferBytes: s.stats.peak.Load(),
		StoreMemoryBytes: mem, DiskBytes: disk}
}

// A LogWriter encodes the records of one shard into chunks. It is not safe
// for concurrent use: one thread (or one mutex) owns it.
type LogWriter struct {
	spool   *Spool
	chunk   []byte
	records int
	scratch []byte
	pending []sealed // chunks the spool's channel had no room for
}

// Append adds r's record. r is not kept.
func (w *LogWriter) Append(r *RequestResult) {
	w.scratch = appendRecord(w.scratch[:0], r)
	w.AppendEncoded(w.scratch)
}

// newChunk takes a free chunk, or makes one (a larger one for a record
// larger than a chunk).
func (w *LogWriter) newChunk(need int) []byte {
	size := w.spool.cfg.ChunkBytes
	if need <= size {
		select {
		case c := <-w.spool.free:
			return c
		default:
		}
	}
	size = max(size, need)
	w.spool.stats.grow(size)
	return make([]byte, 0, size)
}

// seal hands the current chunk to the spool without waiting: when its
// channel is full, the chunk waits in pending and goes with a later one.
func (w *LogWriter) seal() {
	if w.chunk == nil || w.records == 0 {
		return
	}
	w.pending = append(w.pending, sealed{frame: w.chunk, records: w.records})
	w.chunk, w.records = nil, 0
	for len(w.pending) > 0 {
		select {
		case w.spool.in <- w.pending[0]:
			w.pending[0] = sealed{}
			w.pending = w.pending[1:]
		default:
			return
		}
	}
	w.pending = nil
}

// Flush hands every record appended so far to the spool, waiting for
// room. Call it once the writer's shard has stopped.
func (w *LogWriter) Flush() {
	w.seal()
	for _, c := range w.pending {
		w.spool.in <- c
	}
	w.pending = nil
}

// SortOptions say how Sort orders and completes a run's records.
type SortOptions struct {
	// Requests is the run's request count: records are ordered by their
	// index in [0, Requests), a record outside is dropped, and an index no
	// record has becomes a failed "cancelled" request.
	Requests int
	// IndexOf maps a record's index (the engine's queue position) to the
	// index the results carry (the dataset's); nil keeps it.
	IndexOf func(pos int) int
	// CountTokens counts a generated text's tokens. Sort counts the text
	// of each successful request whose usage gave no output count
	// (RequestResult.TextTokens), so that no later pass needs the text or
	// the tokenizer; nil counts nothing.
	CountTokens func(text string) int
	// KeepText keeps generated texts in the sorted log (--save-detailed);
	// otherwise a text goes once counted.
	KeepText bool
}

// Sort orders the spool's records by request into a Log. The spool must
// be closed. It holds at most about BucketBytes of records at once: the
// records go by index range into buckets (files, unless the whole log
// fits one bucket), and each bucket is sorted in memory and appended.
func (s *Spool) Sort(o SortOptions) (*Log, error) {
	if err := s.Close(); err != nil && s.raw.file == nil && len(s.raw.mem) == 0 {
		return nil, err
	}
	return sortStore(s.raw, s.cfg, o)
}

func sortStore(raw *chunkStore, cfg LogConfig, o SortOptions) (*Log, error) {
	n := o.Requests
	if n <= 0 {
		raw.close()
		return LogOf(), nil
	}
	disk, mem := raw.size()
	total := disk + mem
	buckets := int(min(max((total+cfg.BucketBytes-1)/cfg.BucketBytes, 1), maxSortBuckets))
	buckets = min(buckets, max(n, 1))
	parts := make([]*logBuilder, buckets)
	for i := range parts {
		limit := int64(1 << 62) // one bucket: all in memory
		if buckets > 1 {
			limit = -1
		}
		parts[i] = newLogBuilder(cfg.Dir, limit, 64<<10, cfg.OnError)
		parts[i].store.create = cfg.File
	}
	bucketOf := func(index int) int { return int(int64(index) * int64(buckets) / int64(n)) }
	err := raw.frames(func(frame []byte) error {
		return eachRecord(frame, func(rec []byte) error {
			index, ok := recordIndex(rec)
			if !ok {
				return errDamagedRecord
			}
			if index < 0 || index >= n {
				return nil
			}
			parts[bucketOf(index)].appendBytes(rec)
			return nil
		})
	})
	raw.close()
	if err != nil {
		return nil, fmt.Errorf("record log: %w", err)
	}
	out := newLogBuilder(cfg.Dir, cfg.MemoryBytes, cfg.ChunkBytes, cfg.OnError)
	out.store.create = cfg.File
	fin := finisher{o: o}
	type span struct {
		index    int
		off, end int
	}
	var buf []byte
	var spans []span
	next := 0 // the next index due
	for b, part := range parts {
		st := part.finish()
		buf, spans = buf[:0], spans[:0]
		err := st.frames(func(frame []byte) error {
			return eachRecord(frame, func(rec []byte) error {
				index, _ := recordIndex(rec)
				spans = append(spans, span{index, len(buf), len(buf) + len(rec)})
				buf = append(buf, rec...)
				return nil
			})
		})
		st.close()
		if err != nil {
			return nil, fmt.Errorf("record log: %w", err)
		}
		slices.SortStableFunc(spans, func(a, b span) int { return cmp.Compare(a.index, b.index) })
		for _, sp := range spans {
			if sp.index < next {
				continue // a request recorded twice: the first record stands
			}
			for ; next < sp.index; next++ {
				fin.missing(out, next)
			}
			fin.emit(out, buf[sp.off:sp.end])
			next++
		}
		if b == len(parts)-1 {
			for ; next < n; next++ {
				fin.missing(out, next)
			}
		}
	}
	if err := fin.err; err != nil {
		return nil, err
	}
	return &Log{store: out.finish(), n: n}, nil
}

// finisher completes each record as Sort emits it.
type finisher struct {
	o   SortOptions
	dec recordDecoder
	r   RequestResult
	err error
	tmp []byte
}

func (f *finisher) missing(out *logBuilder, pos int) {
	index := pos
	if f.o.IndexOf != nil {
		index = f.o.IndexOf(pos)
	}
	out.append(&RequestResult{Index: index, Error: "cancelled", NumInputSequences: 1, Reasoning: noReasoning})
}

func (f *finisher) emit(out *logBuilder, rec []byte) {
	flags := recordFlags(rec)
	needsCount := f.o.CountTokens != nil && flags&recordSuccess != 0 && flags&recordText != 0 && flags&recordTextCounted == 0
	dropText := !f.o.KeepText && flags&recordText != 0 && (needsCount || flags&recordTextCounted != 0 || flags&recordSuccess == 0)
	if needsCount || dropText {
		if err := f.dec.decode(rec, &f.r); err != nil {
			f.err = fmt.Errorf("record log: %w", err)
			return
		}
		if needsCount && f.r.OutputTokens == 0 {
			f.r.TextTokens, f.r.TextCounted = f.o.CountTokens(f.r.GeneratedText), true
		}
		if !f.o.KeepText && (f.r.TextCounted || !f.r.Success || f.r.OutputTokens != 0) {
			f.r.GeneratedText = ""
		}
		if f.o.IndexOf != nil {
			f.r.Index = f.o.IndexOf(f.r.Index)
		}
		out.append(&f.r)
		return
	}
	if f.o.IndexOf != nil {
		index, _ := recordIndex(rec)
		f.tmp = reindexRecord(f.tmp[:0], rec, f.o.IndexOf(index))
		rec = f.tmp
	}
	out.appendBytes(rec)
}

// recordFlags reads a record's flags.
func recordFlags(rec []byte) uint64 {
	_, n := binary.Uvarint(rec)
	if n <= 0 {
		return 0
	}
	flags, _ := binary.Uvarint(rec[n:])
	return flags
}

// A logBuilder appends records to a chunkStore in order, a chunk at a
// time: the sorted log, the buckets of a sort, a merge's log, LogOf's.
type logBuilder struct {
	store   *chunkStore
	chunk   []byte
	records int
	size    int
	scratch []byte
}

func newLogBuilder(dir string, memLimit int64, chunkBytes int, onError func(error)) *logBuilder {
	return &logBuilder{store: newChunkStore(dir, memLimit, onError), size: chunkBytes}
}

func (b *logBuilder) append(r *RequestResult) {
	b.scratch = appendRecord(b.scratch[:0], r)
	b.appendBytes(b.scratch)
}

func (b *logBuilder) appendBytes(rec []byte) {
	need := binary.MaxVarintLen64 + len(rec)
	if len(b.chunk) > 0 && len(b.chunk)+need > b.size {
		b.flush()
	}
	if b.chunk == nil {
		b.chunk = make([]byte, 0, max(b.size, need))
	}
	b.chunk = binary.AppendUvarint(b.chunk, uint64(len(rec)))
	b.chunk = append(b.chunk, rec...)
	b.records++
}

func (b *logBuilder) flush() {
	if b.records == 0 {
		return
	}
	if b.store.append(b.chunk, b.records) {
		b.chunk = nil // the store keeps it
	} else {
		b.chunk = b.chunk[:0] // written: the chunk is free again
	}
	b.records = 0
}

func (b *logBuilder) finish() *chunkStore {
	b.flush()
	b.chunk = nil
	return b.store
}

// A Log is a run's requests in request order, one record each, read in
// passes: every statistic, output and merge reads it through All. A Log
// may be filtered (Where) without copying. A nil *Log holds no request.
type Log struct {
	store *chunkStore
	n     int // records in the store
	keep  func(*RequestResult) bool
	head  int          // records of the store read, from its first; 0 all
	kept  atomic.Int64 // records All yields, + 1; 0 until counted
	err   atomic.Pointer[error]
}

// LogOf is a Log holding results in the order given, in memory.
func LogOf(results ...RequestResult) *Log {
	b := NewLogBuilder(LogConfig{MemoryBytes: 1 << 62})
	for i := range results {
		b.Append(&results[i])
	}
	return b.Log()
}

// A LogBuilder builds a Log from records in their final order (a merge of
// agents' records, a saved result read back).
type LogBuilder struct {
	b *logBuilder
	n int
}

// NewLogBuilder starts a Log kept as cfg says.
func NewLogBuilder(cfg LogConfig) *LogBuilder {
	cfg = cfg.withDefaults()
	return &LogBuilder{b: newLogBuilder(cfg.Dir, cfg.MemoryBytes, cfg.ChunkBytes, cfg.OnError)}
}

// Append adds r as the Log's next request.
func (b *LogBuilder) Append(r *RequestResult) {
	b.b.append(r)
	b.n++
}

// Log ends the building and returns the Log.
func (b *LogBuilder) Log() *Log {
	return &Log{store: b.b.finish(), n: b.n}
}

// OpenLog reads a log saved by Log.WriteFile. A file whose last frames
// are cut short or damaged (its writer died) reads as the records before
// them, with torn set.
func OpenLog(path string) (l *Log, torn bool, err error) {
	st, torn, err := openChunkStore(path)
	if err != nil {
		return nil, false, err
	}
	return &Log{store: st, n: st.records}, torn, nil
}

// Len is the number of requests All yields.
func (l *Log) Len() int {
	if l == nil {
		return 0
	}
	if l.keep == nil && l.head == 0 {
		return l.n
	}
	if k := l.kept.Load(); k > 0 {
		return int(k - 1)
	}
	n := 0
	for range l.All() {
		n++
	}
	l.kept.Store(int64(n) + 1)
	return n
}

// All yields each request in order with its position in the Log (after
// any filter). The *RequestResult is reused: it is valid until the next
// iteration, and a caller that keeps one copies it (Clone). A damaged
// record ends the pass early; Err tells.
func (l *Log) All() iter.Seq2[int, *RequestResult] {
	return func(yield func(int, *RequestResult) bool) {
		if l == nil || l.store == nil {
			return
		}
		var dec recordDecoder
		r := &RequestResult{}
		pos, read := 0, 0
		err := l.store.frames(func(frame []byte) error {
			return eachRecord(frame, func(rec []byte) error {
				if l.head > 0 && read == l.head {
					return errStopPass
				}
				read++
				if err := dec.decode(rec, r); err != nil {
					return err
				}
				if l.keep != nil && !l.keep(r) {
					return nil
				}
				if !yield(pos, r) {
					return errStopPass
				}
				pos++
				return nil
			})
		})
		if err != nil && err != errStopPass {
			l.err.CompareAndSwap(nil, &err)
		}
	}
}

// errStopPass ends a pass its reader left early.
var errStopPass = errors.New("pass stopped")

// Err returns the first error a pass met reading the log (a damaged
// record or file), nil if none: such a pass ended early.
func (l *Log) Err() error {
	if l == nil {
		return nil
	}
	if p := l.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Where returns the Log of the requests keep accepts, in the same order.
func (l *Log) Where(keep func(*RequestResult) bool) *Log {
	if l == nil {
		return nil
	}
	if prev := l.keep; prev != nil {
		k := keep
		keep = func(r *RequestResult) bool { return prev(r) && k(r) }
	}
	return &Log{store: l.store, n: l.n, keep: keep, head: l.head}
}

// Head returns the Log of l's first n records (before any filter).
func (l *Log) Head(n int) *Log {
	if l == nil {
		return nil
	}
	if n >= l.n {
		n = l.n
	}
	if n <= 0 {
		return LogOf()
	}
	return &Log{store: l.store, n: l.n, keep: l.keep, head: n}
}

// Collect returns copies of every request; for small logs (probes, tests).
func (l *Log) Collect() []RequestResult {
	var out []RequestResult
	for _, r := range l.All() {
		out = append(out, r.Clone())
	}
	return out
}

// Bytes is the log's size: on disk and held in memory.
func (l *Log) Bytes() (disk, memory int64) {
	if l == nil || l.store == nil {
		return 0, 0
	}
	return l.store.size()
}

// WriteFile saves the log (unfiltered) as a file OpenLog reads.
func (l *Log) WriteFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if l != nil && l.store != nil {
		if _, err := l.store.writeTo(f); err != nil {
			f.Close()
			return err
		}
	} else if _, err := f.Write(logHeader()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Close lets the log's file go. A Log is not read after Close.
func (l *Log) Close() error {
	if l == nil || l.store == nil {
		return nil
	}
	return l.store.close()
}

// Clone returns a copy of r that shares no array with it.
func (r *RequestResult) Clone() RequestResult {
	c := *r
	c.ITLNs = slices.Clone(r.ITLNs)
	c.ChunkTokens.counts = slices.Clone(r.ChunkTokens.counts)
	return c
}

// Gather ends a run's recording: every recorder's records go to its spool
// (the run's, or the recorders' own, which are then joined), the servers'
// messages are merged, and the records are sorted into the run's data.
// DurationNs is left for the caller.
func Gather(o SortOptions, recorders ...*Recorder) (*RunData, error) {
	var spools []*Spool
	data := &RunData{}
	for _, r := range recorders {
		r.Flush()
		if !slices.Contains(spools, r.opts.Spool) {
			spools = append(spools, r.opts.Spool)
		}
		data.ServerMessages.merge(&r.messages)
	}
	if len(spools) == 0 {
		data.Log = LogOf()
		return data, nil
	}
	first := spools[0]
	first.Close()
	for _, sp := range spools[1:] {
		sp.Close()
		sp.raw.frames(func(frame []byte) error {
			n, _ := countRecords(frame)
			first.raw.append(slices.Clone(frame), n)
			return nil
		})
		sp.raw.close()
	}
	log, err := first.Sort(o)
	if err != nil {
		return nil, err
	}
	data.Log = log
	return data, first.Err()
}
