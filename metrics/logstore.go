package metrics

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"

	"github.com/stampede-bench/stampede/internal/scratch"
)

// A chunkStore holds a sequence of frames, each a chunk of whole records
// (every record its uvarint length, then its bytes). Frames stay in memory
// until they exceed the store's memory bound; then every frame, those
// held and those to come, goes to a file, in order. A frame the file
// cannot take (a full disk) is kept in memory after the file's frames, so
// nothing written is lost: the first such error is the store's and is
// reported once, through onError.
//
// On disk, after the file header, each frame is its payload's length and
// CRC-32C as two little-endian uint32s, then the payload; a reader stops at
// the first frame that is cut short or whose checksum fails (the torn tail
// of a log whose writer died), as Prometheus' WAL reader does.
//
// One goroutine appends; any number may read once appending is over.
type chunkStore struct {
	dir      string
	create   func(dir string) (LogFile, error)
	memLimit int64
	keep     bool // a file that stays after Close (a saved log); else unlinked at once
	onError  func(error)

	mu        sync.Mutex
	file      LogFile
	fileBytes int64 // the file's length, header included
	fileFr    int   // frames in the file
	mem       [][]byte
	memBytes  int64
	err       error
	records   int // records appended
}

// Frame layout.
const (
	logMagic       = "stampede-records\n"
	logVersion     = 1
	frameHeaderLen = 8
	// maxFrameBytes bounds a frame read back: a frame holds one chunk,
	// or one record larger than a chunk.
	maxFrameBytes = maxRecordBytes + 16
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func logHeader() []byte {
	return binary.AppendUvarint([]byte(logMagic), logVersion)
}

func newChunkStore(dir string, memLimit int64, onError func(error)) *chunkStore {
	return &chunkStore{dir: dir, memLimit: memLimit, onError: onError}
}

// LogFile is what a record log writes its frames to: an *os.File.
type LogFile interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
	Name() string
}

// createLogFile makes the file of a store in dir, unlinked at once unless
// kept: the log goes with the process, however it ends.
func createLogFile(dir string, keep bool) (LogFile, error) {
	if !keep {
		return scratch.CreateUnlinked(dir, "stampede-*.records")
	}
	return os.CreateTemp(dir, "stampede-*.records")
}

// append adds one frame of records (n of them). kept reports that the
// store holds frame itself (in memory), so the caller must not reuse it;
// otherwise frame is written and free again.
func (s *chunkStore) append(frame []byte, n int) (kept bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records += n
	if s.file == nil && s.err == nil && s.memBytes+int64(len(frame)) > s.memLimit {
		s.spill()
	}
	if s.file != nil && s.err == nil {
		err := s.writeFrame(frame)
		if err == nil {
			return false
		}
		s.fail(err)
	}
	s.mem = append(s.mem, frame)
	s.memBytes += int64(len(frame))
	return true
}

// spill opens the file and moves the frames held in memory to it.
func (s *chunkStore) spill() {
	var f LogFile
	var err error
	if s.create != nil {
		f, err = s.create(s.dir)
	} else {
		f, err = createLogFile(s.dir, s.keep)
	}
	if err != nil {
		s.fail(fmt.Errorf("record log: %w", err))
		return
	}
	s.file = f
	if _, err := f.WriteAt(logHeader(), 0); err != nil {
		s.fail(fmt.Errorf("record log %s: %w", f.Name(), err))
		return
	}
	s.fileBytes = int64(len(logHeader()))
	for len(s.mem) > 0 {
		if err := s.writeFrame(s.mem[0]); err != nil {
			s.fail(err)
			return
		}
		s.memBytes -= int64(len(s.mem[0]))
		s.mem[0] = nil
		s.mem = s.mem[1:]
	}
	s.mem = nil
}

func (s *chunkStore) writeFrame(frame []byte) error {
	var h [frameHeaderLen]byte
	binary.LittleEndian.PutUint32(h[0:], uint32(len(frame)))
	binary.LittleEndian.PutUint32(h[4:], crc32.Checksum(frame, castagnoli))
	if _, err := s.file.WriteAt(h[:], s.fileBytes); err != nil {
		return fmt.Errorf("record log %s: %w", s.file.Name(), err)
	}
	if _, err := s.file.WriteAt(frame, s.fileBytes+frameHeaderLen); err != nil {
		return fmt.Errorf("record log %s: %w", s.file.Name(), err)
	}
	s.fileBytes += frameHeaderLen + int64(len(frame))
	s.fileFr++
	return nil
}

func (s *chunkStore) fail(err error) {
	if s.err != nil {
		return
	}
	s.err = err
	if s.onError != nil {
		s.onError(err)
	}
}

// Err returns the first error writing the store, nil if none.
func (s *chunkStore) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// size is the store's bytes: on disk, and held in memory.
func (s *chunkStore) size() (disk, memory int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fileBytes, s.memBytes
}

// frames calls f with each frame in order: the file's, then memory's. The
// slice passed is valid during the call only. A damaged file frame ends
// the file's part with errTornLog (after the frames before it).
func (s *chunkStore) frames(f func(frame []byte) error) error {
	s.mu.Lock()
	file, n, mem := s.file, s.fileFr, s.mem
	s.mu.Unlock()
	if file != nil {
		off := int64(len(logHeader()))
		var buf []byte
		var h [frameHeaderLen]byte
		for range n {
			if _, err := file.ReadAt(h[:], off); err != nil {
				return fmt.Errorf("%w: %v", errTornLog, err)
			}
			size := binary.LittleEndian.Uint32(h[0:])
			if size > maxFrameBytes {
				return errTornLog
			}
			if cap(buf) < int(size) {
				buf = make([]byte, size)
			}
			buf = buf[:size]
			if _, err := file.ReadAt(buf, off+frameHeaderLen); err != nil {
				return fmt.Errorf("%w: %v", errTornLog, err)
			}
			if crc32.Checksum(buf, castagnoli) != binary.LittleEndian.Uint32(h[4:]) {
				return errTornLog
			}
			if err := f(buf); err != nil {
				return err
			}
			off += frameHeaderLen + int64(size)
		}
	}
	for _, frame := range mem {
		if err := f(frame); err != nil {
			return err
		}
	}
	return nil
}

// errTornLog is a log file whose frames end in damage.
var errTornLog = errors.New("record log: a frame is cut short or damaged")

// close removes the store's file (already unlinked unless kept).
func (s *chunkStore) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mem = nil
	if s.file == nil {
		return nil
	}
	err := s.file.Close()
	s.file = nil
	return err
}

// writeTo writes the store as a log file: the header, then every frame.
func (s *chunkStore) writeTo(w io.Writer) (int64, error) {
	n, err := w.Write(logHeader())
	total := int64(n)
	if err != nil {
		return total, err
	}
	var h [frameHeaderLen]byte
	err = s.frames(func(frame []byte) error {
		binary.LittleEndian.PutUint32(h[0:], uint32(len(frame)))
		binary.LittleEndian.PutUint32(h[4:], crc32.Checksum(frame, castagnoli))
		if n, err := w.Write(h[:]); err != nil {
			total += int64(n)
			return err
		}
		n, err := w.Write(frame)
		total += int64(frameHeaderLen + n)
		return err
	})
	return total, err
}

// openChunkStore reads a log file written by writeTo (or kept by a
// store): its frames up to the first damaged one. torn reports damage.
func openChunkStore(path string) (s *chunkStore, torn bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	head := make([]byte, len(logHeader()))
	if _, err := io.ReadFull(f, head); err != nil || string(head[:len(logMagic)]) != logMagic {
		f.Close()
		return nil, false, fmt.Errorf("%s: not a stampede record log", path)
	}
	if v, _ := binary.Uvarint(head[len(logMagic):]); v != logVersion {
		f.Close()
		return nil, false, fmt.Errorf("%s: record log version %d, this stampede reads %d", path, v, logVersion)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false, err
	}
	s = &chunkStore{file: f, keep: true, fileBytes: int64(len(head))}
	var h [frameHeaderLen]byte
	for {
		if _, err := f.ReadAt(h[:], s.fileBytes); err != nil {
			torn = s.fileBytes != info.Size()
			break
		}
		size := int64(binary.LittleEndian.Uint32(h[0:]))
		if size > maxFrameBytes || s.fileBytes+frameHeaderLen+size > info.Size() {
			torn = true
			break
		}
		frame := make([]byte, size)
		if _, err := f.ReadAt(frame, s.fileBytes+frameHeaderLen); err != nil ||
			crc32.Checksum(frame, castagnoli) != binary.LittleEndian.Uint32(h[4:]) {
			torn = true
			break
		}
		n, ok := countRecords(frame)
		if !ok {
			torn = true
			break
		}
		s.records += n
		s.fileBytes += frameHeaderLen + size
		s.fileFr++
	}
	return s, torn, nil
}

// countRecords counts the records of a frame; false when it does not
// split into whole records.
func countRecords(frame []byte) (int, bool) {
	n := 0
	for len(frame) > 0 {
		size, k := binary.Uvarint(frame)
		if k <= 0 || size > uint64(len(frame)-k) {
			return n, false
		}
		frame = frame[k+int(size):]
		n++
	}
	return n, true
}

// eachRecord calls f with each record of a frame.
func eachRecord(frame []byte, f func(rec []byte) error) error {
	for len(frame) > 0 {
		size, k := binary.Uvarint(frame)
		if k <= 0 || size > uint64(len(frame)-k) {
			return errDamagedRecord
		}
		if err := f(frame[k : k+int(size)]); err != nil {
			return err
		}
		frame = frame[k+int(size):]
	}
	return nil
}
