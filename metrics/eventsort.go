package metrics

import (
	"bufio"
	"cmp"
	"container/heap"
	"encoding/binary"
	"io"
	"os"
	"slices"

	"github.com/stampede-bench/stampede/internal/scratch"
)

// An eventSort sorts (key, aux) pairs, by key then aux, in bounded memory:
// the edges of a run's requests (start and end times) for the sweeps that
// count requests in flight. Up to eventRun pairs are sorted in memory;
// beyond that each full buffer is sorted and written to a file as a run,
// and the runs are merged as they are read back: an external merge sort,
// 16 bytes a pair on disk and 16 MB in memory at most.
type eventSort struct {
	dir  string
	buf  []event
	file *os.File
	runs []int64 // each run's offset in file; its end is the next's
	end  int64
	err  error
}

type event struct{ key, aux uint64 }

func compareEvents(a, b event) int {
	if c := cmp.Compare(a.key, b.key); c != 0 {
		return c
	}
	return cmp.Compare(a.aux, b.aux)
}

// eventRun is the pairs an eventSort sorts in memory (16 MB).
var eventRun = 1 << 20

func newEventSort(dir string) *eventSort {
	if dir == "" {
		dir = os.TempDir()
	}
	return &eventSort{dir: dir}
}

func (s *eventSort) add(key, aux uint64) {
	s.buf = append(s.buf, event{key, aux})
	if len(s.buf) >= eventRun {
		s.spill()
	}
}

// spill writes the buffer, sorted, as a run.
func (s *eventSort) spill() {
	slices.SortFunc(s.buf, compareEvents)
	if s.file == nil && s.err == nil {
		f, err := scratch.CreateUnlinked(s.dir, "stampede-*.events")
		if err != nil {
			s.err = err
			return
		}
		s.file = f
	}
	if s.err != nil {
		return
	}
	w := bufio.NewWriterSize(io.NewOffsetWriter(s.file, s.end), 64<<10)
	var b [16]byte
	for _, e := range s.buf {
		binary.LittleEndian.PutUint64(b[0:], e.key)
		binary.LittleEndian.PutUint64(b[8:], e.aux)
		w.Write(b[:])
	}
	if err := w.Flush(); err != nil {
		s.err = err
		return
	}
	s.runs = append(s.runs, s.end)
	s.end += int64(16 * len(s.buf))
	s.buf = s.buf[:0]
}

// each calls f with every pair in order. When a run could not be written
// (no room on disk), the pairs sort in memory instead.
func (s *eventSort) each(f func(key, aux uint64)) {
	if len(s.runs) == 0 || s.err != nil {
		if s.err != nil {
			// Read back what was written, then sort everything at once.
			s.buf = append(s.buf, s.readAll()...)
		}
		slices.SortFunc(s.buf, compareEvents)
		for _, e := range s.buf {
			f(e.key, e.aux)
		}
		return
	}
	if len(s.buf) > 0 {
		s.spill()
	}
	h := &runHeap{}
	for i, off := range s.runs {
		end := s.end
		if i+1 < len(s.runs) {
			end = s.runs[i+1]
		}
		r := &runReader{r: bufio.NewReaderSize(io.NewSectionReader(s.file, off, end-off), 32<<10)}
		if r.next() {
			heap.Push(h, r)
		}
	}
	for h.Len() > 0 {
		r := (*h)[0]
		f(r.cur.key, r.cur.aux)
		if r.next() {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
}

func (s *eventSort) readAll() []event {
	var out []event
	if s.file == nil {
		return nil
	}
	r := bufio.NewReader(io.NewSectionReader(s.file, 0, s.end))
	var b [16]byte
	for {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return out
		}
		out = append(out, event{binary.LittleEndian.Uint64(b[0:]), binary.LittleEndian.Uint64(b[8:])})
	}
}

func (s *eventSort) close() {
	if s.file != nil {
		s.file.Close()
	}
	s.buf = nil
}

type runReader struct {
	r   *bufio.Reader
	cur event
	b   [16]byte
}

func (r *runReader) next() bool {
	if _, err := io.ReadFull(r.r, r.b[:]); err != nil {
		return false
	}
	r.cur = event{binary.LittleEndian.Uint64(r.b[0:]), binary.LittleEndian.Uint64(r.b[8:])}
	return true
}

type runHeap []*runReader

func (h runHeap) Len() int           { return len(h) }
func (h runHeap) Less(i, j int) bool { return compareEvents(h[i].cur, h[j].cur) < 0 }
func (h runHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)        { *h = append(*h, x.(*runReader)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
