package datasets

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/jpeg"

	"github.com/stampede-bench/stampede/datasets/pyrand"
)

// Synthetic videos for random-mm's video buckets (Frames > 1).
//
// vLLM's RandomMultiModalDataset.generate_synthetic_video draws the whole
// clip at once, rng.integers(0, 256, (frames, height, width, 3),
// dtype=uint8), hands each frame to OpenCV's VideoWriter (fourcc "mp4v",
// 30 fps, frameSize (width, height)) without converting it, and sends the
// file's bytes as {"type": "video_url", "video_url": {"url":
// "data:video/mp4;base64,..."}}. OpenCV takes a frame's channels as BGR,
// so the clip a server decodes shows the first drawn byte of each pixel
// as its blue, the third as its red.
//
// stampede takes the same draws off the same generator (so everything
// after a video, and the pixels themselves, match Python for the same
// seed) and writes the same container with the same frames, size and
// rate, but each frame is a baseline JPEG (Motion JPEG): an MPEG-4 Part 2
// encoder does not exist in pure Go. The file is an ISO base media file as
// FFmpeg writes Motion JPEG into .mp4: an "mp4v" sample entry whose
// decoder config names JPEG (object type 0x6C), which FFmpeg, and so
// OpenCV and PyAV behind vLLM's video loader, decode. The bytes, and the
// server's decoding work, differ from Python's; the frames decoded are
// Python's pixels up to each codec's loss.

// videoFPS is the frame rate vLLM's VideoWriter is opened with.
const videoFPS = 30

// videoJPEGQuality is the quality of each Motion JPEG frame, chosen so a
// clip takes about the bytes OpenCV's MPEG-4 one does: for the default
// 720p, 16-frame bucket (seed 0), OpenCV 4.6 writes 7,503,032 bytes and
// stampede about 7.5 MB (scripts/check-video-opencv.py measures both).
// So a request carries about the payload Python's does.
const videoJPEGQuality = 65

// maxVideoSide is the largest width or height a frame can have: JPEG and
// the sample entry store both in 16 bits.
const maxVideoSide = 1<<16 - 1

// randomClip is one synthetic video as numpy drew it: rgb holds frames ×
// height × width × 3 bytes in C order (the drawn channel order, not yet
// swapped to OpenCV's BGR reading).
type randomClip struct {
	width, height, frames int
	rgb                   []byte
}

// newRandomClip is generate_synthetic_video's draw: one uint8 fill of
// frames·height·width·3 bytes, which numpy takes from ⌈n/4⌉ 32-bit draws,
// the same as randomImage for a frames·height rows tall image.
func newRandomClip(rng *pyrand.Generator, width, height, frames int) *randomClip {
	return &randomClip{width, height, frames, drawBytes(rng, 3*width*height*frames)}
}

// frame writes frame k into dst as OpenCV reads it: the drawn bytes
// (c0, c1, c2) of a pixel are its blue, green and red.
func (c *randomClip) frame(k int, dst *image.RGBA) {
	n := c.width * c.height
	src := c.rgb[3*n*k : 3*n*(k+1)]
	pix := dst.Pix
	for p, q := 0, 0; q < len(src); p, q = p+4, q+3 {
		pix[p], pix[p+1], pix[p+2], pix[p+3] = src[q+2], src[q+1], src[q], 0xff
	}
}

// videoURLPart is process_video's result for raw bytes:
// {"type": "video_url", "video_url": {"url": "data:video/mp4;base64,..."}}.
func videoURLPart(mp4 []byte) json.RawMessage {
	const head = `{"type":"video_url","video_url":{"url":"data:video/mp4;base64,`
	const tail = `"}}`
	out := make([]byte, 0, len(head)+base64.StdEncoding.EncodedLen(len(mp4))+len(tail))
	out = append(out, head...)
	out = base64.StdEncoding.AppendEncode(out, mp4)
	return append(out, tail...)
}

// checkVideoBucket refuses the buckets no video file can hold.
func checkVideoBucket(b MMBucket) error {
	if b.Width > maxVideoSide || b.Height > maxVideoSide {
		return fmt.Errorf("--random-mm-bucket-config: bucket %s: height and width must be at most %d for a video", bucketKeyRepr(b), maxVideoSide)
	}
	return nil
}

// MP4 (ISO/IEC 14496-12) writing. The file is what FFmpeg's mp4 muxer
// writes for one Motion JPEG track without edits:
//
//	ftyp  isom, compatible isom iso2 mp41
//	mdat  the frames back to back
//	moov  mvhd (timescale 1000)
//	      trak  tkhd, mdia (mdhd timescale 30: one tick a frame; hdlr vide;
//	            minf (vmhd, dinf/dref, stbl (stsd mp4v+esds, stts, stsc,
//	            stsz, stco)))
//
// No stss box: every sample is a sync sample. One chunk holds every frame,
// so stsc and stco have one entry each.

// mp4MovieTimescale is mvhd's and tkhd's time unit (1/1000 s).
const mp4MovieTimescale = 1000

// jpegObjectType is the MPEG-4 Systems objectTypeIndication of JPEG
// (ISO/IEC 10918-1) in a DecoderConfigDescriptor.
const jpegObjectType = 0x6C

// errMP4TooLarge is returned when the frames do not fit 32-bit box sizes.
var errMP4TooLarge = errors.New("video over 4 GiB")

// writeMP4 wraps the JPEG frames (each width × height) into an MP4 file
// played at fps frames per second.
func writeMP4(width, height, fps int, frames [][]byte) ([]byte, error) {
	total := 0
	for _, f := range frames {
		total += len(f)
	}
	if total > 1<<32-1024 {
		return nil, errMP4TooLarge
	}
	var b mp4Builder
	b.buf = make([]byte, 0, total+1024+12*len(frames))
	ftyp := b.open("ftyp")
	b.raw("isom")
	b.u32(0x200)
	b.raw("isom")
	b.raw("iso2")
	b.raw("mp41")
	b.close(ftyp)

	mdat := b.open("mdat")
	dataOffset := len(b.buf)
	for _, f := range frames {
		b.buf = append(b.buf, f...)
	}
	b.close(mdat)

	n := uint32(len(frames))
	durationMs := uint32((int64(n)*mp4MovieTimescale + int64(fps)/2) / int64(fps))
	moov := b.open("moov")
	mvhd := b.full("mvhd", 0, 0)
	b.u32(0) // creation time
	b.u32(0) // modification time
	b.u32(mp4MovieTimescale)
	b.u32(durationMs)
	b.u32(0x00010000) // rate 1.0
	b.u16(0x0100)     // volume 1.0
	b.zeros(10)
	b.matrix()
	b.zeros(24)   // pre_defined
	b.u32(2)      // next track id
	b.close(mvhd) //
	trak := b.open("trak")
	tkhd := b.full("tkhd", 0, 3) // enabled, in movie
	b.u32(0)
	b.u32(0)
	b.u32(1) // track id
	b.u32(0)
	b.u32(durationMs)
	b.zeros(8)
	b.u16(0) // layer
	b.u16(0) // alternate group
	b.u16(0) // volume (video)
	b.u16(0)
	b.matrix()
	b.u32(uint32(width) << 16)
	b.u32(uint32(height) << 16)
	b.close(tkhd)

	mdia := b.open("mdia")
	mdhd := b.full("mdhd", 0, 0)
	b.u32(0)
	b.u32(0)
	b.u32(uint32(fps)) // one tick per frame
	b.u32(n)
	b.u16(0x55c4) // language "und"
	b.u16(0)
	b.close(mdhd)
	hdlr := b.full("hdlr", 0, 0)
	b.u32(0)
	b.raw("vide")
	b.zeros(12)
	b.raw("VideoHandler\x00")
	b.close(hdlr)

	minf := b.open("minf")
	vmhd := b.full("vmhd", 0, 1)
	b.zeros(8) // graphicsmode, opcolor
	b.close(vmhd)
	dinf := b.open("dinf")
	dref := b.full("dref", 0, 0)
	b.u32(1)
	url := b.full("url ", 0, 1) // the data is in this file
	b.close(url)
	b.close(dref)
	b.close(dinf)

	stbl := b.open("stbl")
	stsd := b.full("stsd", 0, 0)
	b.u32(1)
	b.visualSampleEntry(width, height, frames)
	b.close(stsd)
	stts := b.full("stts", 0, 0)
	b.u32(1)
	b.u32(n)
	b.u32(1)
	b.close(stts)
	stsc := b.full("stsc", 0, 0)
	b.u32(1)
	b.u32(1) // first chunk
	b.u32(n) // samples per chunk
	b.u32(1) // sample description index
	b.close(stsc)
	stsz := b.full("stsz", 0, 0)
	b.u32(0) // sizes vary
	b.u32(n)
	for _, f := range frames {
		b.u32(uint32(len(f)))
	}
	b.close(stsz)
	stco := b.full("stco", 0, 0)
	b.u32(1)
	b.u32(uint32(dataOffset))
	b.close(stco)
	b.close(stbl)
	b.close(minf)
	b.close(mdia)
	b.close(trak)
	b.close(moov)
	return b.buf, nil
}

// mp4Builder appends boxes; open returns the offset close patches the
// size into.
type mp4Builder struct{ buf []byte }

func (b *mp4Builder) open(kind string) int {
	at := len(b.buf)
	b.u32(0)
	b.raw(kind)
	return at
}

// full opens a FullBox: a box with a version byte and 24 bits of flags.
func (b *mp4Builder) full(kind string, version byte, flags uint32) int {
	at := b.open(kind)
	b.u32(uint32(version)<<24 | flags)
	return at
}

func (b *mp4Builder) close(at int) {
	binary.BigEndian.PutUint32(b.buf[at:], uint32(len(b.buf)-at))
}

func (b *mp4Builder) u16(v uint16) { b.buf = binary.BigEndian.AppendUint16(b.buf, v) }
func (b *mp4Builder) u32(v uint32) { b.buf = binary.BigEndian.AppendUint32(b.buf, v) }
func (b *mp4Builder) raw(s string) { b.buf = append(b.buf, s...) }
func (b *mp4Builder) zeros(n int)  { b.buf = append(b.buf, make([]byte, n)...) }

// matrix writes the identity transformation matrix (16.16 and 2.30).
func (b *mp4Builder) matrix() {
	for _, v := range [9]uint32{0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000} {
		b.u32(v)
	}
}

// visualSampleEntry writes the "mp4v" entry with its esds: an
// ES_Descriptor holding a DecoderConfigDescriptor for JPEG (visual stream,
// no decoder-specific info) and the predefined SLConfigDescriptor 2.
func (b *mp4Builder) visualSampleEntry(width, height int, frames [][]byte) {
	entry := b.open("mp4v")
	b.zeros(6)
	b.u16(1) // data reference index
	b.zeros(16)
	b.u16(uint16(width))
	b.u16(uint16(height))
	b.u32(0x00480000) // 72 dpi
	b.u32(0x00480000)
	b.u32(0)
	b.u16(1) // frames per sample
	b.zeros(32)
	b.u16(0x0018) // depth: colour, no alpha
	b.u16(0xffff) // pre_defined = -1

	largest, total := 0, 0
	for _, f := range frames {
		largest = max(largest, len(f))
		total += len(f)
	}
	avgBitrate := 0
	if len(frames) > 0 {
		avgBitrate = int(int64(total) * 8 * videoFPS / int64(len(frames)))
	}
	maxBitrate := largest * 8 * videoFPS
	esds := b.full("esds", 0, 0)
	b.descriptor(0x03, 3+(2+13)+(2+1)) // ES_Descriptor
	b.u16(1)                           // ES_ID
	b.buf = append(b.buf, 0)           // no stream dependence, URL or OCR
	b.descriptor(0x04, 13)             // DecoderConfigDescriptor
	b.buf = append(b.buf, jpegObjectType, 0x04<<2|1)
	b.buf = append(b.buf, byte(largest>>16), byte(largest>>8), byte(largest)) // bufferSizeDB
	b.u32(uint32(min(maxBitrate, 1<<32-1)))
	b.u32(uint32(min(avgBitrate, 1<<32-1)))
	b.descriptor(0x06, 1) // SLConfigDescriptor
	b.buf = append(b.buf, 2)
	b.close(esds)
	b.close(entry)
}

// descriptor writes an MPEG-4 descriptor tag and its length (under 128
// here, so one byte).
func (b *mp4Builder) descriptor(tag byte, length int) {
	b.buf = append(b.buf, tag, byte(length))
}

// encode turns the clip into an MP4 file of Motion JPEG frames.
func (c *randomClip) encode() ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, c.width, c.height))
	frames := make([][]byte, c.frames)
	var buf bytes.Buffer
	for k := range frames {
		c.frame(k, img)
		buf.Reset()
		if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: videoJPEGQuality}); err != nil {
			return nil, fmt.Errorf("video frame %d: %w", k, err)
		}
		frames[k] = bytes.Clone(buf.Bytes())
	}
	return writeMP4(c.width, c.height, videoFPS, frames)
}
