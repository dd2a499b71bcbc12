package datasets

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"image"
	"image/jpeg"
	"runtime"
	"sync"

	"github.com/stampede-bench/stampede/datasets/pyrand"
)

// pilJPEGQuality is PIL's default JPEG quality, which vLLM's
// process_image uses.
const pilJPEGQuality = 75

// pixelDrawChunk is how many 32-bit draws randomImage takes at a time.
const pixelDrawChunk = 4096

// randomImage is generate_synthetic_image: rng.integers(0, 256, (height,
// width, 3), dtype=uint8) as an RGB image.
func randomImage(rng *pyrand.Generator, width, height int) *image.RGBA {
	rgb := drawBytes(rng, 3*width*height)
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	pix := img.Pix
	for p, q := 0, 0; q < len(rgb); p, q = p+4, q+3 {
		pix[p], pix[p+1], pix[p+2], pix[p+3] = rgb[q], rgb[q+1], rgb[q+2], 0xff
	}
	return img
}

// drawBytes is rng.integers(0, 256, n, dtype=uint8). numpy fills uint8
// arrays from one 32-bit draw per four bytes, lowest byte first, and a new
// fill starts with a fresh draw, so n bytes take ⌈n / 4⌉ draws, the same
// draws Integers(0, 2**32) returns. The result is exactly n bytes long.
func drawBytes(rng *pyrand.Generator, n int) []byte {
	out := make([]byte, (n+3)/4*4)
	draws := make([]int64, min(pixelDrawChunk, len(out)/4))
	for off := 0; off < len(out); {
		chunk := draws[:min(len(draws), (len(out)-off)/4)]
		// The range [0, 2**32) is valid, so this cannot fail.
		_ = rng.IntegersInto(chunk, 0, 1<<32)
		for _, d := range chunk {
			binary.LittleEndian.PutUint32(out[off:], uint32(d))
			off += 4
		}
	}
	return out[:n]
}

// jpegPool encodes images to image_url content parts, and clips to
// video_url ones, on worker goroutines; encode blocks once every worker is
// busy and one job waits, or once the raw pixels queued and in work reach
// mediaBytesInFlight, which bounds the media held in memory (a 720p clip
// of 16 frames is 44 MB).
type jpegPool struct {
	jobs    chan jpegJob
	wg      sync.WaitGroup
	pending sync.WaitGroup // jobs queued and not yet encoded
	closed  bool
	mu      sync.Mutex
	err     error

	budget   sync.Cond // on mu; signalled when pixels are released
	maxBytes int       // mediaBytesInFlight
	inFlight int       // raw pixel bytes queued or being encoded
	peak     int       // the most inFlight has been
}

// mediaBytesInFlight is how many raw pixel bytes may wait for or be under
// encoding at once; a single larger item is let through alone.
const mediaBytesInFlight = 256 << 20

// jpegJob is one image or (clip set) one video.
type jpegJob struct {
	img  *image.RGBA
	clip *randomClip
	dst  *json.RawMessage
}

func newJPEGPool(workers int) *jpegPool {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	p := &jpegPool{jobs: make(chan jpegJob, workers), maxBytes: mediaBytesInFlight}
	p.budget.L = &p.mu
	for range workers {
		p.wg.Go(func() {
			var buf bytes.Buffer
			for job := range p.jobs {
				err := p.run(job, &buf)
				p.mu.Lock()
				if err != nil && p.err == nil {
					p.err = err
				}
				p.inFlight -= job.size()
				p.budget.Broadcast()
				p.mu.Unlock()
				p.pending.Done()
			}
		})
	}
	return p
}

// size is the job's raw pixel bytes.
func (j jpegJob) size() int {
	if j.clip != nil {
		return len(j.clip.rgb)
	}
	return len(j.img.Pix)
}

// run encodes one job into its part.
func (p *jpegPool) run(job jpegJob, buf *bytes.Buffer) error {
	if job.clip != nil {
		mp4, err := job.clip.encode()
		if err == nil {
			*job.dst = videoURLPart(mp4)
		}
		return err
	}
	buf.Reset()
	err := jpeg.Encode(buf, job.img, &jpeg.Options{Quality: pilJPEGQuality})
	if err == nil {
		*job.dst = imageURLPart(buf.Bytes())
	}
	return err
}

// queue waits for room in the pixel budget, then hands the job over.
func (p *jpegPool) queue(job jpegJob) {
	n := job.size()
	p.mu.Lock()
	for p.inFlight > 0 && p.inFlight+n > p.maxBytes {
		p.budget.Wait()
	}
	p.inFlight += n
	p.peak = max(p.peak, p.inFlight)
	p.mu.Unlock()
	p.pending.Add(1)
	p.jobs <- job
}

// encode queues img; its part is written to *dst before close returns.
func (p *jpegPool) encode(img *image.RGBA, dst *json.RawMessage) {
	p.queue(jpegJob{img: img, dst: dst})
}

// encodeClip queues a video the same way.
func (p *jpegPool) encodeClip(c *randomClip, dst *json.RawMessage) {
	p.queue(jpegJob{clip: c, dst: dst})
}

// wait waits for the images queued so far and reports the first failure.
func (p *jpegPool) wait() error {
	p.pending.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// close waits for the queued images, stops the workers and reports the
// first failure; a second close does nothing.
func (p *jpegPool) close() error {
	if !p.closed {
		p.closed = true
		close(p.jobs)
		p.wg.Wait()
	}
	return p.err
}

// imageURLPart is process_image's result for a JPEG:
// {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,..."}}.
func imageURLPart(jpg []byte) json.RawMessage {
	const head = `{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,`
	const tail = `"}}`
	out := make([]byte, 0, len(head)+base64.StdEncoding.EncodedLen(len(jpg))+len(tail))
	out = append(out, head...)
	out = base64.StdEncoding.AppendEncode(out, jpg)
	return append(out, tail...)
}
