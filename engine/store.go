package engine

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/stampede-bench/stampede/internal/scratch"
	"github.com/stampede-bench/stampede/shard"
	"github.com/stampede-bench/stampede/sse"
)

// Store holds a run's requests from when they are encoded, before the clock
// starts, until the run reads them (DESIGN, "Memory follows the load"):
// their bytes in memory up to StoreConfig.MemoryBytes, the rest spilled to
// a temporary file, and beside them a compact table of what the engine
// reads of each request without its bytes (16 bytes a request). During
// the run a loader goroutine reads the bytes ahead of the shards into the
// queue's bounded window (window.go), so the run holds the window and the
// requests in flight, not every request's bytes.
//
// The spill file is unlinked as soon as it is created: nothing is left on
// disk when the process ends, however it ends (Ctrl-C, a kill), and Close
// gives its space back at once. Appends come from one goroutine; the run
// reads the store once.
type Store struct {
	cfg  StoreConfig
	dir  string // where the spill goes
	reqs []storedRequest
	// offsetsNs are the requests' OffsetNs; nil while all are 0.
	offsetsNs []int64
	// maxFrontEnd is the highest FrontEnd appended, first by request
	// maxFrontEndAt.
	maxFrontEnd, maxFrontEndAt int
	bytes                      int64 // Wire bytes appended

	// chunks hold the bytes kept in memory, the first requests' (memBytes
	// of them); the rest are in spill, spilled bytes long.
	chunks   [][]byte
	memBytes int64
	spill    spillFile
	w        *bufio.Writer
	spilled  int64
	err      error // the first write error; the store takes nothing after it
	read     bool
}

// storedRequest is what the store keeps of a request beside its bytes.
type storedRequest struct {
	size      uint32
	promptLen int32
	numInputs int32
	frontEnd  uint16
	pooling   sse.PoolingUsage
}

// StoreConfig sizes a Store.
type StoreConfig struct {
	// MemoryBytes is how many request bytes stay in memory; those past it
	// are spilled. 0 means DefaultStoreMemoryBytes; negative spills every
	// request.
	MemoryBytes int64
	// Dir is the spill's directory; "" is os.TempDir() ($TMPDIR).
	Dir string
	// Expected is how many requests will be appended, if known: the free
	// space of Dir is checked against them when the spill starts.
	Expected int
	// FirstIndex and IndexStride give request k's Index: FirstIndex + k ×
	// IndexStride (a stride of 0 is 1). A cluster agent's share is every
	// size-th request from its own index.
	FirstIndex, IndexStride int

	// openSpill, when set, replaces the temporary file (tests).
	openSpill func(dir string) (spillFile, error)
}

// DefaultStoreMemoryBytes is the request bytes a store keeps in memory
// before it spills: a run whose requests fit sends them from memory, and a
// larger one holds this, the window and the requests in flight.
const DefaultStoreMemoryBytes = 32 << 20

// storeChunk is the size of the memory a store's bytes are kept in; a
// larger request gets a chunk of its own.
const storeChunk = 1 << 20

// spillFile is where a store's spilled bytes go: written in order, read
// back from the start.
type spillFile interface {
	io.Writer
	io.ReaderAt
	io.Closer
}

// NewStore returns an empty store.
func NewStore(cfg StoreConfig) *Store {
	if cfg.MemoryBytes == 0 {
		cfg.MemoryBytes = DefaultStoreMemoryBytes
	}
	if cfg.IndexStride == 0 {
		cfg.IndexStride = 1
	}
	dir := cfg.Dir
	if dir == "" {
		dir = os.TempDir()
	}
	return &Store{cfg: cfg, dir: dir}
}

// Len returns how many requests were appended.
func (s *Store) Len() int { return len(s.reqs) }

// Bytes returns the Wire bytes appended, and how many of them were spilled.
func (s *Store) Bytes() (total, spilled int64) { return s.bytes, s.spilled }

// Append adds q, the next request; its Index must be FirstIndex + Len() ×
// IndexStride. The bytes are copied: q.Wire may be reused. An error (the
// spill cannot be written, or will not fit) is sticky.
func (s *Store) Append(q Request) error {
	if s.err != nil {
		return s.err
	}
	if s.read {
		return errors.New("request store: append after the run read it")
	}
	k := len(s.reqs)
	if want := s.cfg.FirstIndex + k*s.cfg.IndexStride; q.Index != want {
		return fmt.Errorf("request store: request %d has index %d, want %d", k, q.Index, want)
	}
	if len(q.Wire) > math.MaxUint32 || q.PromptLen > math.MaxInt32 || q.NumInputSequences > math.MaxInt32 || q.FrontEnd > math.MaxUint16 || q.FrontEnd < 0 {
		return fmt.Errorf("request store: request %d is out of the store's range (%d bytes, prompt %d, %d inputs, front end %d)",
			q.Index, len(q.Wire), q.PromptLen, q.NumInputSequences, q.FrontEnd)
	}
	if err := s.keep(q.Wire); err != nil {
		s.err = err
		return err
	}
	s.reqs = append(s.reqs, storedRequest{size: uint32(len(q.Wire)), promptLen: int32(q.PromptLen),
		numInputs: int32(q.NumInputSequences), frontEnd: uint16(q.FrontEnd), pooling: q.PoolingUsage})
	if q.OffsetNs != 0 && s.offsetsNs == nil {
		s.offsetsNs = make([]int64, k, max(k+1, s.cfg.Expected))
	}
	if s.offsetsNs != nil {
		s.offsetsNs = append(s.offsetsNs, q.OffsetNs)
	}
	if q.FrontEnd > s.maxFrontEnd {
		s.maxFrontEnd, s.maxFrontEndAt = q.FrontEnd, q.Index
	}
	s.bytes += int64(len(q.Wire))
	return nil
}

// keep puts wire in memory while the bound allows, else in the spill.
func (s *Store) keep(wire []byte) error {
	if s.spill == nil && s.memBytes+int64(len(wire)) <= s.cfg.MemoryBytes {
		last := len(s.chunks) - 1
		if last < 0 || cap(s.chunks[last])-len(s.chunks[last]) < len(wire) {
			s.chunks = append(s.chunks, make([]byte, 0, max(storeChunk, len(wire))))
			last++
		}
		s.chunks[last] = append(s.chunks[last], wire...)
		s.memBytes += int64(len(wire))
		return nil
	}
	if s.spill == nil {
		if err := s.startSpill(len(wire)); err != nil {
			return err
		}
	}
	if _, err := s.w.Write(wire); err != nil {
		return s.writeError(err)
	}
	s.spilled += int64(len(wire))
	return nil
}

// startSpill opens the spill once the memory is used up, after checking
// that what is still to come fits in the directory's free space, counted
// at the mean size of the requests so far and next.
func (s *Store) startSpill(next int) error {
	if left := s.cfg.Expected - len(s.reqs); left > 0 {
		mean := float64(s.memBytes+int64(next)) / float64(len(s.reqs)+1)
		need := int64(mean * float64(left))
		if free, err := scratch.FreeBytes(s.dir); err == nil && need > free {
			return fmt.Errorf("request store: %s has %s free, and the %d requests past the first %s held in memory need about %s: %s",
				s.dir, byteSize(free), left, byteSize(s.memBytes), byteSize(need), s.dirAdvice())
		}
	}
	open := s.cfg.openSpill
	if open == nil {
		open = openUnlinked
	}
	f, err := open(s.dir)
	if err != nil {
		return fmt.Errorf("request store: the spill file in %s: %w (%s)", s.dir, err, s.dirAdvice())
	}
	s.spill = f
	s.w = bufio.NewWriterSize(f, storeChunk)
	return nil
}

// dirAdvice says how to put the spill elsewhere.
func (s *Store) dirAdvice() string {
	if s.cfg.Dir == "" {
		return "set TMPDIR to a directory with room"
	}
	return "give the store a directory with room"
}

func (s *Store) writeError(err error) error {
	return fmt.Errorf("request store: spilling requests to %s: %w (%s)", s.dir, err, s.dirAdvice())
}

// Finish flushes the spill; the store is then ready for the run. Its error
// is a write error, before the clock starts.
func (s *Store) Finish() error {
	if s.err != nil {
		return s.err
	}
	if s.w != nil {
		if err := s.w.Flush(); err != nil {
			s.err = s.writeError(err)
			return s.err
		}
	}
	return nil
}

// SetOffsetsNs replaces the requests' OffsetNs (a cluster agent's share
// takes its times from the global schedule); len(offsets) must be Len().
func (s *Store) SetOffsetsNs(offsets []int64) error {
	if len(offsets) != len(s.reqs) {
		return fmt.Errorf("request store: %d offsets for %d requests", len(offsets), len(s.reqs))
	}
	s.offsetsNs = offsets
	return nil
}

// Close gives back the spill's disk space and the memory. Any goroutine may
// call it, after the run or instead of one.
func (s *Store) Close() error {
	s.chunks = nil
	if s.spill == nil {
		return nil
	}
	err := s.spill.Close()
	s.spill = nil
	return err
}

// The compact table, as the engine reads it (requestSet).

func (s *Store) index(k int) int     { return s.cfg.FirstIndex + k*s.cfg.IndexStride }
func (s *Store) promptLen(k int) int { return int(s.reqs[k].promptLen) }
func (s *Store) offsetNs(k int) int64 {
	if s.offsetsNs == nil {
		return 0
	}
	return s.offsetsNs[k]
}

func (s *Store) frontEndOutside(k int) (index, frontEnd int, bad bool) {
	return s.maxFrontEndAt, s.maxFrontEnd, s.maxFrontEnd >= k
}

func (s *Store) meanBytes() int64 {
	if len(s.reqs) == 0 {
		return 0
	}
	return s.bytes / int64(len(s.reqs))
}

// storeReader reads a store's requests in order, once.
type storeReader struct {
	s     *Store
	next  int
	chunk int // the chunk the next in-memory request is in
	at    int // its offset there
	file  *bufio.Reader
}

// reader starts the store's one read.
func (s *Store) reader() (*storeReader, error) {
	if s.read {
		return nil, errors.New("request store: read twice")
	}
	if err := s.Finish(); err != nil {
		return nil, err
	}
	s.read = true
	r := &storeReader{s: s}
	if s.spill != nil {
		r.file = bufio.NewReaderSize(io.NewSectionReader(s.spill, 0, s.spilled), storeChunk)
	}
	return r, nil
}

// size is the byte size of request k.
func (r *storeReader) size(k int) int { return int(r.s.reqs[k].size) }

// read returns the next request as a shard sends it. Bytes kept in memory
// are handed out where they are (a chunk is let go by the store once read
// past, and by the collector once the requests in it ended); spilled ones
// are read into memory of their own.
func (r *storeReader) read() (shard.Request, error) {
	s := r.s
	k := r.next
	m := s.reqs[k]
	q := shard.Request{PromptLen: int(m.promptLen), NumInputSequences: int(m.numInputs),
		PoolingUsage: m.pooling, Dest: int(m.frontEnd)}
	n := int(m.size)
	if r.chunk < len(s.chunks) {
		c := s.chunks[r.chunk]
		if r.at+n > len(c) {
			s.chunks[r.chunk] = nil
			r.chunk++
			r.at = 0
		}
	}
	switch {
	case r.chunk < len(s.chunks) && n > 0:
		c := s.chunks[r.chunk]
		q.Wire = c[r.at : r.at+n : r.at+n]
		r.at += n
	case n > 0:
		if r.file == nil {
			return q, fmt.Errorf("request store: request %d is in neither memory nor the spill", k)
		}
		q.Wire = make([]byte, n)
		if _, err := io.ReadFull(r.file, q.Wire); err != nil {
			return q, fmt.Errorf("request store: reading request %d back from the spill in %s: %w", s.index(k), s.dir, err)
		}
	}
	r.next++
	if r.next == len(s.reqs) {
		s.chunks = nil
	}
	return q, nil
}

// openUnlinked creates the spill in dir, unlinked at once: it lives while
// it is open.
func openUnlinked(dir string) (spillFile, error) {
	return scratch.CreateUnlinked(dir, "stampede-requests-*")
}

// byteSize writes n bytes in MiB or GiB.
func byteSize(n int64) string {
	if n >= 10<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
