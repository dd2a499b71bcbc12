package spans

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"time"
	"unsafe"

	"google.golang.org/grpc/mem"
)

// A job is one export handed to the decoding thread, in one of three
// forms: plain protobuf bytes, a gzip body to inflate first, or a gRPC
// message still in gRPC's buffers, to copy out. The handler that holds
// the bytes waits for the verdict, so they outlive the job.
type job struct {
	plain   []byte
	gzipped []byte
	message mem.BufferSlice
	done    chan verdict
}

// refusal is why an export was refused after its body was read.
type refusal int

const (
	accepted refusal = iota
	refusedMalformed
	refusedTooLarge
	refusedClosing
)

// verdict is what became of a job: refused (with the error to answer),
// or taken, with how many request spans it kept and dropped.
type verdict struct {
	refusal              refusal
	err                  error
	kept, dropped, other int
}

// keepBufferBytes is the largest buffer the decoding thread keeps between
// exports: a batch of 512 spans fits, a rare huge export's buffer goes
// back to the garbage collector rather than staying resident.
const keepBufferBytes = 1 << 20

// decode runs j on the decoding thread and waits for its verdict.
func (r *Receiver) decode(j *job) verdict {
	j.done = make(chan verdict, 1)
	select {
	case r.jobs <- j:
	case <-r.quit:
		return verdict{refusal: refusedClosing, err: errors.New("the receiver is stopping")}
	}
	return <-j.done
}

// work is the decoding thread: one goroutine locked to an OS thread of the
// lowest priority (lowerThreadPriority), which inflates, counts, decodes
// and keeps each export in turn. It never unlocks the thread, so the
// thread ends with it.
func (r *Receiver) work() {
	runtime.LockOSThread()
	lowerThreadPriority()
	defer close(r.workerDone)
	var d decoder
	for {
		select {
		case j := <-r.jobs:
			j.done <- r.run(&d, j)
			d.shrink()
		case <-r.quit:
			return
		}
	}
}

// decoder is the decoding thread's reusable state.
type decoder struct {
	buf  []byte
	zr   *gzip.Reader
	keep []wireSpan
	span wireSpan
}

const sizeofWireSpan = unsafe.Sizeof(wireSpan{})

func (d *decoder) shrink() {
	if cap(d.buf) > keepBufferBytes {
		d.buf = nil
	}
	if cap(d.keep)*int(sizeofWireSpan) > keepBufferBytes {
		d.keep = nil
	}
}

// run decodes one export: its bytes, counted in spans before one is
// decoded (refused past maxExportSpans), then each span decoded in place;
// the request spans within the receiver's bound are copied out and kept,
// the rest counted. A malformed export keeps nothing.
func (r *Receiver) run(d *decoder, j *job) verdict {
	start := time.Now()
	v := r.decodeExport(d, j)
	r.mu.Lock()
	r.counts.BusyNs += int64(time.Since(start))
	switch v.refusal {
	case refusedMalformed:
		r.counts.Malformed++
	case refusedTooLarge:
		r.counts.TooLarge++
	case accepted:
		received := int64(start.Sub(r.started))
		for i := range d.keep {
			s := d.keep[i].Span
			s.RequestID = string(d.keep[i].requestID)
			s.ReceivedNs = received
			r.spans = append(r.spans, s)
		}
		r.counts.Exports++
		r.counts.Spans += int64(v.kept + v.dropped)
		r.counts.Other += int64(v.other)
		r.counts.Dropped += int64(v.dropped)
	}
	r.mu.Unlock()
	d.keep = d.keep[:0]
	if v.refusal == accepted {
		select {
		case r.arrived <- struct{}{}:
		default:
		}
	}
	return v
}

// decodeExport fills d.keep with the export's request spans within the
// receiver's room and counts the others.
func (r *Receiver) decodeExport(d *decoder, j *job) verdict {
	body, err := d.body(j, r.lim.maxBodyBytes)
	if err != nil {
		return refuse(err)
	}
	if _, err := countSpans(body, r.lim.maxExportSpans); err != nil {
		return refuse(err)
	}
	r.mu.Lock()
	room := max(r.max-len(r.spans), 0) // only this thread appends
	r.mu.Unlock()
	d.keep = d.keep[:0]
	var v verdict
	err = eachSpan(body, func(b []byte) error {
		latency, err := decodeSpan(b, &d.span)
		switch {
		case err != nil:
			return err
		case !latency:
			v.other++
		case len(d.keep) < room:
			d.keep = append(d.keep, d.span)
		default:
			v.dropped++
		}
		return nil
	})
	if err != nil {
		d.keep = d.keep[:0]
		return refuse(err)
	}
	v.kept = len(d.keep)
	return v
}

// refuse is the verdict on an export whose bytes were refused.
func refuse(err error) verdict {
	var tooMany errTooManySpans
	var tooLarge errBodyTooLarge
	if errors.As(err, &tooMany) || errors.As(err, &tooLarge) {
		return verdict{refusal: refusedTooLarge, err: err}
	}
	return verdict{refusal: refusedMalformed, err: err}
}

// errBodyTooLarge is an export whose body grew past the limit once
// inflated.
type errBodyTooLarge struct{ limit int }

func (e errBodyTooLarge) Error() string {
	return fmt.Sprintf("body over %d bytes once inflated", e.limit)
}

// body is j's protobuf bytes: as they came, inflated into d.buf, or
// copied into it out of gRPC's buffers.
func (d *decoder) body(j *job, limit int) ([]byte, error) {
	switch {
	case j.gzipped != nil:
		return d.inflate(j.gzipped, limit)
	case j.message != nil:
		n := j.message.Len()
		d.buf = slices.Grow(d.buf[:0], n)[:n]
		j.message.CopyTo(d.buf)
		return d.buf, nil
	}
	return j.plain, nil
}

// inflate gunzips src into d.buf, refusing it once it passes limit bytes:
// the buffer never grows past limit+1 whatever src claims.
func (d *decoder) inflate(src []byte, limit int) ([]byte, error) {
	var err error
	if d.zr == nil {
		d.zr, err = gzip.NewReader(bytes.NewReader(src))
	} else {
		err = d.zr.Reset(bytes.NewReader(src))
	}
	if err != nil {
		return nil, fmt.Errorf("gzip body: %w", err)
	}
	buf := d.buf[:0]
	defer func() { d.buf = buf[:0] }()
	for {
		if len(buf) == cap(buf) {
			if len(buf) > limit {
				return nil, errBodyTooLarge{limit}
			}
			buf = slices.Grow(buf, min(max(cap(buf), 4096), limit+1-len(buf)))
		}
		n, err := d.zr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > limit {
			return nil, errBodyTooLarge{limit}
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, fmt.Errorf("gzip body: %w", err)
		}
	}
}
