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
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/datasets/pyrand"
)

// parsedMP4 is what readMP4 finds in a file: the track's sample entry,
// timing and samples.
type parsedMP4 struct {
	brand             string
	entry             string // sample entry type
	width, height     int
	objectType        byte // esds objectTypeIndication
	timescale         uint32
	durationTicks     uint32
	sampleDelta       uint32
	movieDurationMs   uint32
	samples           [][]byte
	tkhdWidth, tkhdHt uint32 // 16.16
}

// readMP4 parses the ISO base media files writeMP4 produces: it walks the
// box tree, checks every box fits its parent, and pulls the samples out of
// mdat through stsz, stsc and stco as a demuxer does.
func readMP4(file []byte) (*parsedMP4, error) {
	p := &parsedMP4{}
	var sizes []uint32
	var chunkOffsets []uint32
	var perChunk uint32
	var walk func(b []byte, depth int) error
	walk = func(b []byte, depth int) error {
		if depth > 8 {
			return errors.New("boxes nested too deep")
		}
		for len(b) > 0 {
			if len(b) < 8 {
				return fmt.Errorf("%d stray bytes", len(b))
			}
			size := binary.BigEndian.Uint32(b)
			kind := string(b[4:8])
			if size < 8 || uint64(size) > uint64(len(b)) {
				return fmt.Errorf("box %q of size %d in %d bytes", kind, size, len(b))
			}
			body := b[8:size]
			b = b[size:]
			need := func(n int) error {
				if len(body) < n {
					return fmt.Errorf("box %q: %d bytes, want %d", kind, len(body), n)
				}
				return nil
			}
			u32 := func(off int) uint32 { return binary.BigEndian.Uint32(body[off:]) }
			switch kind {
			case "ftyp":
				if err := need(8); err != nil {
					return err
				}
				p.brand = string(body[:4])
			case "moov", "trak", "mdia", "minf", "stbl", "dinf":
				if err := walk(body, depth+1); err != nil {
					return err
				}
			case "mvhd":
				if err := need(20); err != nil {
					return err
				}
				p.movieDurationMs = u32(16)
			case "tkhd":
				if err := need(84); err != nil {
					return err
				}
				p.tkhdWidth, p.tkhdHt = u32(76), u32(80)
			case "mdhd":
				if err := need(20); err != nil {
					return err
				}
				p.timescale, p.durationTicks = u32(12), u32(16)
			case "stsd":
				if err := need(8 + 8 + 78); err != nil {
					return err
				}
				entry := body[8:]
				esize := binary.BigEndian.Uint32(entry)
				if esize < 8+78 || int(esize) > len(entry) {
					return fmt.Errorf("sample entry of size %d", esize)
				}
				p.entry = string(entry[4:8])
				p.width = int(binary.BigEndian.Uint16(entry[8+24:]))
				p.height = int(binary.BigEndian.Uint16(entry[8+26:]))
				esds := entry[8+78 : esize]
				if len(esds) < 8+4+5+3+2+1 || string(esds[4:8]) != "esds" {
					return errors.New("no esds after the sample entry")
				}
				d := esds[12:]
				if d[0] != 0x03 || d[5] != 0x04 {
					return fmt.Errorf("esds descriptors % x", d[:6])
				}
				p.objectType = d[7]
			case "stts":
				if err := need(16); err != nil {
					return err
				}
				if u32(4) != 1 {
					return fmt.Errorf("stts with %d entries", u32(4))
				}
				p.sampleDelta = u32(12)
			case "stsc":
				if err := need(20); err != nil {
					return err
				}
				if u32(4) != 1 {
					return fmt.Errorf("stsc with %d entries", u32(4))
				}
				perChunk = u32(12)
			case "stsz":
				if err := need(12); err != nil {
					return err
				}
				n := int(u32(8))
				if err := need(12 + 4*n); err != nil {
					return err
				}
				sizes = make([]uint32, n)
				for i := range sizes {
					sizes[i] = u32(12 + 4*i)
				}
			case "stco":
				if err := need(8); err != nil {
					return err
				}
				n := int(u32(4))
				if err := need(8 + 4*n); err != nil {
					return err
				}
				chunkOffsets = make([]uint32, n)
				for i := range chunkOffsets {
					chunkOffsets[i] = u32(8 + 4*i)
				}
			}
		}
		return nil
	}
	if err := walk(file, 0); err != nil {
		return nil, err
	}
	if len(chunkOffsets) != 1 || int(perChunk) != len(sizes) {
		return nil, fmt.Errorf("%d chunks of %d samples for %d samples", len(chunkOffsets), perChunk, len(sizes))
	}
	off := uint64(chunkOffsets[0])
	for _, s := range sizes {
		if off+uint64(s) > uint64(len(file)) {
			return nil, fmt.Errorf("sample at %d of %d bytes past the end (%d)", off, s, len(file))
		}
		p.samples = append(p.samples, file[off:off+uint64(s)])
		off += uint64(s)
	}
	return p, nil
}

// checkVideo parses an MP4 from writeMP4 and decodes every frame.
func checkVideo(t testing.TB, file []byte, width, height, frames int) []image.Image {
	t.Helper()
	p, err := readMP4(file)
	if err != nil {
		t.Fatalf("%dx%d×%d: %v", width, height, frames, err)
	}
	if p.brand != "isom" || p.entry != "mp4v" || p.objectType != jpegObjectType {
		t.Errorf("brand %q, entry %q, object type %#x", p.brand, p.entry, p.objectType)
	}
	if p.width != width || p.height != height || p.tkhdWidth != uint32(width)<<16 || p.tkhdHt != uint32(height)<<16 {
		t.Errorf("size %dx%d (track %#x×%#x), want %dx%d", p.width, p.height, p.tkhdWidth, p.tkhdHt, width, height)
	}
	if p.timescale != videoFPS || p.sampleDelta != 1 || p.durationTicks != uint32(frames) {
		t.Errorf("timescale %d, delta %d, duration %d: want %d fps for %d frames", p.timescale, p.sampleDelta, p.durationTicks, videoFPS, frames)
	}
	if want := uint32((frames*1000 + videoFPS/2) / videoFPS); p.movieDurationMs != want {
		t.Errorf("movie duration %d ms, want %d", p.movieDurationMs, want)
	}
	if len(p.samples) != frames {
		t.Fatalf("%d samples, want %d", len(p.samples), frames)
	}
	out := make([]image.Image, frames)
	for k, s := range p.samples {
		img, err := jpeg.Decode(bytes.NewReader(s))
		if err != nil {
			t.Fatalf("frame %d: %v", k, err)
		}
		if b := img.Bounds(); b.Dx() != width || b.Dy() != height {
			t.Fatalf("frame %d is %v, want %dx%d", k, b, width, height)
		}
		out[k] = img
	}
	return out
}

func TestRandomClipTakesNumpysDraws(t *testing.T) {
	// One fill for the whole clip: 3·5·3·3 = 135 bytes take 34 draws, not
	// 3 fills of 12 draws (45 bytes each) as three images would.
	for _, c := range [][3]int{{5, 3, 3}, {1, 1, 2}, {16, 9, 4}} {
		w, h, n := c[0], c[1], c[2]
		g := pyrand.NewGenerator(8)
		clip := newRandomClip(g, w, h, n)
		ref := pyrand.NewGenerator(8)
		want := referenceImageBytes(ref, 3*w*h*n)
		if !bytes.Equal(clip.rgb, want) {
			t.Fatalf("%dx%d×%d: the clip's bytes are not numpy's", w, h, n)
		}
		if g.Uint64() != ref.Uint64() {
			t.Errorf("%dx%d×%d: the clip took a different number of draws", w, h, n)
		}
	}
}

func TestClipFramesAreReadAsBGR(t *testing.T) {
	clip := newRandomClip(pyrand.NewGenerator(3), 4, 2, 3)
	img := image.NewRGBA(image.Rect(0, 0, 4, 2))
	for k := range 3 {
		clip.frame(k, img)
		for y := range 2 {
			for x := range 4 {
				q := ((k*2+y)*4 + x) * 3
				got := img.RGBAAt(x, y)
				if got.R != clip.rgb[q+2] || got.G != clip.rgb[q+1] || got.B != clip.rgb[q] || got.A != 0xff {
					t.Fatalf("frame %d (%d,%d) = %v, want BGR of % x", k, x, y, got, clip.rgb[q:q+3])
				}
			}
		}
	}
}

func TestVideoRoundTrip(t *testing.T) {
	clip := newRandomClip(pyrand.NewGenerator(1), 48, 32, 5)
	file, err := clip.encode()
	if err != nil {
		t.Fatal(err)
	}
	frames := checkVideo(t, file, 48, 32, 5)
	// The decoded frames are the drawn pixels as OpenCV reads them: each
	// frame is closer to its own BGR reading than to the RGB one or to any
	// other frame's.
	ref := image.NewRGBA(image.Rect(0, 0, 48, 32))
	for k, f := range frames {
		clip.frame(k, ref)
		own := frameDistance(f, ref, false)
		if rgb := frameDistance(f, ref, true); own >= rgb {
			t.Errorf("frame %d: distance %d to the BGR reading, %d to the RGB one", k, own, rgb)
		}
		for j := range frames {
			if j == k {
				continue
			}
			clip.frame(j, ref)
			if other := frameDistance(f, ref, false); other <= own {
				t.Errorf("frame %d is no closer to its pixels (%d) than to frame %d's (%d)", k, own, j, other)
			}
		}
		clip.frame(k, ref)
	}
}

// frameDistance sums |decoded − want| over the channels, with want's red
// and blue swapped when swap is set.
func frameDistance(decoded image.Image, want *image.RGBA, swap bool) int {
	d := 0
	abs := func(a, b int) int {
		if a > b {
			return a - b
		}
		return b - a
	}
	b := want.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := decoded.At(x, y).RGBA()
			w := want.RGBAAt(x, y)
			wr, wb := int(w.R), int(w.B)
			if swap {
				wr, wb = wb, wr
			}
			d += abs(int(r>>8), wr) + abs(int(g>>8), int(w.G)) + abs(int(bl>>8), wb)
		}
	}
	return d
}

func TestWriteMP4Layout(t *testing.T) {
	frames := [][]byte{[]byte("abc"), []byte("defgh"), {}}
	file, err := writeMP4(7, 3, 30, frames)
	if err != nil {
		t.Fatal(err)
	}
	p, err := readMP4(file)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.samples, frames) {
		t.Errorf("samples %q, want %q", p.samples, frames)
	}
	if p.width != 7 || p.height != 3 || p.movieDurationMs != 100 {
		t.Errorf("%dx%d, %d ms", p.width, p.height, p.movieDurationMs)
	}
	// The file starts with ftyp and the samples sit in mdat.
	if string(file[4:8]) != "ftyp" || !bytes.Contains(file, []byte("mdatabcdefgh")) {
		t.Errorf("layout: % x", file[:min(len(file), 48)])
	}
}

// FuzzVideo writes clips of fuzzed sizes and seeds and reads them back
// frame by frame.
func FuzzVideo(f *testing.F) {
	f.Add(uint64(0), uint8(1), uint8(1), uint8(2))
	f.Add(uint64(7), uint8(17), uint8(9), uint8(3))
	f.Add(uint64(99), uint8(64), uint8(33), uint8(1))
	f.Fuzz(func(t *testing.T, seed uint64, w, h, n uint8) {
		width, height, frames := int(w%80)+1, int(h%80)+1, int(n%6)+1
		a := newRandomClip(pyrand.NewGenerator(seed), width, height, frames)
		file, err := a.encode()
		if err != nil {
			t.Fatal(err)
		}
		checkVideo(t, file, width, height, frames)
		// Same seed, same file.
		again, err := newRandomClip(pyrand.NewGenerator(seed), width, height, frames).encode()
		if err != nil || !bytes.Equal(again, file) {
			t.Fatalf("the same seed wrote a different file (%v)", err)
		}
	})
}

// videoPart decodes a video_url content part's data URL.
func videoPart(t *testing.T, part json.RawMessage) []byte {
	t.Helper()
	var p struct {
		Type     string `json:"type"`
		VideoURL struct {
			URL string `json:"url"`
		} `json:"video_url"`
	}
	if err := json.Unmarshal(part, &p); err != nil {
		t.Fatalf("part %.80s: %v", part, err)
	}
	data, ok := strings.CutPrefix(p.VideoURL.URL, "data:video/mp4;base64,")
	if p.Type != "video_url" || !ok {
		t.Fatalf("part %.80s is not an mp4 video_url", part)
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestSampleRandomMMVideos(t *testing.T) {
	tok := newBPETokenizer()
	// One image bucket, two video buckets; at most one video a request, as
	// --random-mm-limit-mm-per-prompt's default.
	buckets := []MMBucket{{8, 12, 1, 1}, {16, 24, 3, 1}, {10, 6, 2, 2}}
	o := RandomMMOptions{
		RandomOptions: RandomOptions{
			Env:      &Env{NumPrompts: 12, Seed: 4, Backend: chatBackend, RequestIDPrefix: "v-", Workers: 2},
			InputLen: 20, OutputLen: 5,
		},
		BaseItemsPerRequest: 2, NumMMItemsRangeRatio: 0.5,
		Limits:  []MMLimit{{"image", 2}, {"video", 1}},
		Buckets: buckets,
	}
	reqs, err := SampleRandomMM(tok, o)
	if err != nil {
		t.Fatal(err)
	}
	videos, images := 0, 0
	for i, r := range reqs {
		perRequest := 0
		for _, part := range r.MultiModal {
			if bytes.Contains(part[:40], []byte(`"video_url"`)) {
				raw := videoPart(t, part)
				p, err := readMP4(raw)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				var want MMBucket
				for _, b := range buckets[1:] {
					if b.Width == p.width && b.Height == p.height {
						want = b
					}
				}
				if want.Frames == 0 {
					t.Fatalf("request %d: a %dx%d video matches no bucket", i, p.width, p.height)
				}
				checkVideo(t, raw, want.Width, want.Height, want.Frames)
				videos++
				perRequest++
				continue
			}
			imageSize(t, part)
			images++
		}
		if perRequest > 1 {
			t.Errorf("request %d has %d videos, over the limit of 1", i, perRequest)
		}
	}
	if videos == 0 || images == 0 {
		t.Errorf("%d videos and %d images: want both", videos, images)
	}

	// The generator is consumed as Python consumes it: the same texts and
	// item sizes as a sequential reference that draws each video's pixels
	// in one fill (with caps no request reaches, which it does not model).
	wide := o
	wide.Limits = []MMLimit{{"image", 3}, {"video", 3}}
	wideReqs, err := SampleRandomMM(tok, wide)
	if err != nil {
		t.Fatal(err)
	}
	ref := referenceRandomMM(tok, wide, 1, 3, []MMBucket{{8, 12, 1, 0.25}, {16, 24, 3, 0.25}, {10, 6, 2, 0.5}})
	for i, r := range wideReqs {
		var sizes [][2]int
		for _, part := range r.MultiModal {
			if bytes.Contains(part[:40], []byte(`"video_url"`)) {
				p, err := readMP4(videoPart(t, part))
				if err != nil {
					t.Fatal(err)
				}
				sizes = append(sizes, [2]int{p.width, p.height})
				continue
			}
			sizes = append(sizes, imageSize(t, part))
		}
		if r.Prompt != ref.reqs[i].Prompt || !reflect.DeepEqual(sizes, ref.sizes[i]) {
			t.Fatalf("request %d differs from the reference: items %v, want %v", i, sizes, ref.sizes[i])
		}
	}

	// Same seed, same bytes, whatever the number of workers.
	o.Workers = 1
	again, err := SampleRandomMM(tok, o)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, reqs) {
		t.Error("the same seed gave different requests")
	}
}

func BenchmarkEncodeVideo720p16(b *testing.B) {
	clip := newRandomClip(pyrand.NewGenerator(0), 1280, 720, 16)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := clip.encode(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestWriteVideoFixture writes a clip for scripts/check-video-opencv.py
// when STAMPEDE_VIDEO_DUMP names a directory: seed 0, 64×48, 16 frames,
// the clip numpy.random.default_rng(0).integers(0, 256, (16, 48, 64, 3),
// dtype=uint8) gives.
func TestWriteVideoFixture(t *testing.T) {
	dir := os.Getenv("STAMPEDE_VIDEO_DUMP")
	if dir == "" {
		t.Skip("STAMPEDE_VIDEO_DUMP not set")
	}
	for _, s := range [][3]int{{64, 48, 16}, {1280, 720, 16}} {
		file, err := newRandomClip(pyrand.NewGenerator(0), s[0], s[1], s[2]).encode()
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(dir, fmt.Sprintf("clip-%dx%dx%d.mp4", s[0], s[1], s[2]))
		if err := os.WriteFile(name, file, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestJPEGPoolBoundsPixelsInFlight(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 32, 32)) // 4096 bytes
	p := newJPEGPool(3)
	p.maxBytes = 2*len(img.Pix) + 100
	parts := make([]json.RawMessage, 30)
	for i := range parts {
		p.encode(img, &parts[i])
	}
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	// Without the budget, three workers and three queued jobs would hold
	// six images.
	if p.peak > p.maxBytes || p.inFlight != 0 {
		t.Errorf("peak %d bytes in flight over a budget of %d (%d left)", p.peak, p.maxBytes, p.inFlight)
	}
	for i, part := range parts {
		if imageSize(t, part) != [2]int{32, 32} {
			t.Fatalf("image %d not encoded", i)
		}
	}

	// An item over the budget on its own still goes through, alone.
	p = newJPEGPool(2)
	p.maxBytes = 1000
	big := newRandomClip(pyrand.NewGenerator(1), 64, 64, 2)
	var clipPart, imgPart json.RawMessage
	p.encodeClip(big, &clipPart)
	p.encode(img, &imgPart)
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	if p.peak != len(big.rgb) {
		t.Errorf("peak %d bytes, want the clip's %d alone", p.peak, len(big.rgb))
	}
	checkVideo(t, videoPart(t, clipPart), 64, 64, 2)
	imageSize(t, imgPart)
}
