package datasets

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"runtime"
	"strings"
	"testing"
)

// pngChunk appends one PNG chunk with its CRC.
func pngChunk(b []byte, typ string, data []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	start := len(b)
	b = append(b, typ...)
	b = append(b, data...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[start:]))
}

// hugePNG is a valid PNG header declaring w x h RGBA pixels, followed by
// a few bytes of pixel data: image/png allocates the whole picture
// (w*h*4 bytes) before reading them.
func hugePNG(w, h uint32) []byte {
	b := []byte("\x89PNG\r\n\x1a\n")
	ihdr := binary.BigEndian.AppendUint32(nil, w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 6, 0, 0, 0)
	b = pngChunk(b, "IHDR", ihdr)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(make([]byte, 64))
	zw.Close()
	b = pngChunk(b, "IDAT", z.Bytes())
	return pngChunk(b, "IEND", nil)
}

func smallPNG(t testing.TB) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 3, 2))
	img.Set(1, 1, color.NRGBA{R: 200, A: 128})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestImagePixelCap(t *testing.T) {
	bomb := hugePNG(50000, 50000) // 10 GB as NRGBA
	if *writeCorpus {
		writeSeed(t, "FuzzJPEGDataURL", "png-50000x50000", bomb)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := jpegDataURL(bomb)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "50000x50000 is 2500000000 pixels") {
		t.Fatalf("err = %v, want the pixel limit", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Errorf("allocated %d MiB", got>>20)
	}
	url, err := jpegDataURL(smallPNG(t))
	if err != nil || !strings.HasPrefix(url, "data:image/jpeg;base64,") {
		t.Fatalf("small PNG: %q, %v", url, err)
	}
}

// FuzzJPEGDataURL: whatever bytes a dataset's image holds, the result
// is an error or a JPEG data URL, within the pixel limit.
func FuzzJPEGDataURL(f *testing.F) {
	f.Add(smallPNG(f))
	f.Add(hugePNG(2, 2))
	f.Add([]byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"))
	f.Fuzz(func(t *testing.T, b []byte) {
		url, err := jpegDataURL(b)
		if err == nil && !strings.HasPrefix(url, "data:image/jpeg;base64,") {
			t.Fatalf("url %q", url)
		}
	})
}
