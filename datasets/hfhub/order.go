package hfhub

import (
	"errors"
	"fmt"
	"io"

	"github.com/stampede-bench/stampede/datasets/pyrand"
)

// Order says how rows come out of a split, as load_dataset(...,
// streaming=Stream) followed by .shuffle(seed=Seed) unless !Shuffle.
type Order struct {
	Shuffle bool
	// Stream is load_dataset's streaming=True (vLLM's default; --no-stream
	// clears it): an IterableDataset, whose shuffle permutes the files and
	// then draws rows through a 1,000-row buffer. Without it the whole
	// split is loaded and permuted at once (Dataset.shuffle).
	Stream bool
	Seed   int64
}

// BufferSize is IterableDataset.shuffle's default buffer_size.
const BufferSize = 1000

// Rows iterates over a split's rows in Order.
type Rows struct {
	files []string
	order Order

	// sequential reading
	cur  rowSource
	next int

	// --no-stream: every row, and the permutation
	all  []*Object
	perm []int
	pos  int

	// streaming shuffle buffer
	buf     []*Object
	rng     *pyrand.Generator
	batch   []int64
	batchAt int
	drained bool
}

// Open starts reading files in order.
func Open(files []string, order Order) (*Rows, error) {
	r := &Rows{files: append([]string(nil), files...), order: order}
	if !order.Shuffle {
		return r, nil
	}
	if order.Seed < 0 {
		return nil, fmt.Errorf("seed %d: numpy's default_rng expects a non-negative integer seed", order.Seed)
	}
	if !order.Stream {
		for {
			o, err := r.sequential()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, err
			}
			r.all = append(r.all, o)
		}
		r.perm = pyrand.NewGenerator(uint64(order.Seed)).Permutation(len(r.all))
		return r, nil
	}
	// The file list and the buffer each draw from their own copy of
	// default_rng(seed) in its initial state.
	pyrand.NewGenerator(uint64(order.Seed)).Shuffle(len(r.files), func(i, j int) {
		r.files[i], r.files[j] = r.files[j], r.files[i]
	})
	r.rng = pyrand.NewGenerator(uint64(order.Seed))
	return r, nil
}

// Next returns the next row, or io.EOF.
func (r *Rows) Next() (*Object, error) {
	switch {
	case !r.order.Shuffle:
		return r.sequential()
	case !r.order.Stream:
		if r.pos >= len(r.perm) {
			return nil, io.EOF
		}
		r.pos++
		return r.all[r.perm[r.pos-1]], nil
	}
	return r.buffered()
}

// buffered is BufferShuffledExamplesIterable: fill the buffer; once full,
// each new row takes the place of a random one, which is yielded; at the
// end the buffer is shuffled and yielded in order.
func (r *Rows) buffered() (*Object, error) {
	for !r.drained {
		o, err := r.sequential()
		if errors.Is(err, io.EOF) {
			r.drained = true
			r.rng.Shuffle(len(r.buf), func(i, j int) { r.buf[i], r.buf[j] = r.buf[j], r.buf[i] })
			break
		}
		if err != nil {
			return nil, err
		}
		if len(r.buf) < BufferSize {
			r.buf = append(r.buf, o)
			continue
		}
		if r.batchAt == len(r.batch) {
			if r.batch == nil {
				r.batch = make([]int64, BufferSize)
			}
			_ = r.rng.IntegersInto(r.batch, 0, BufferSize)
			r.batchAt = 0
		}
		i := r.batch[r.batchAt]
		r.batchAt++
		out := r.buf[i]
		r.buf[i] = o
		return out, nil
	}
	if len(r.buf) == 0 {
		return nil, io.EOF
	}
	out := r.buf[0]
	r.buf = r.buf[1:]
	return out, nil
}

// sequential reads the files one after another.
func (r *Rows) sequential() (*Object, error) {
	for {
		if r.cur == nil {
			if r.next >= len(r.files) {
				return nil, io.EOF
			}
			src, err := openFile(r.files[r.next])
			if err != nil {
				return nil, err
			}
			r.cur = src
			r.next++
		}
		o, err := r.cur.next()
		if errors.Is(err, io.EOF) {
			_ = r.cur.close()
			r.cur = nil
			continue
		}
		return o, err
	}
}

// Close releases the open file.
func (r *Rows) Close() error {
	if r.cur != nil {
		err := r.cur.close()
		r.cur = nil
		return err
	}
	return nil
}
