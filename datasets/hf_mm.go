package datasets

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	_ "image/gif" // formats process_image's PIL opens, as far as Go's library has them
	"image/jpeg"
	_ "image/png"
	"os"
	"path/filepath"
	"strings"

	"github.com/stampede-bench/stampede/datasets/hfhub"
	"github.com/stampede-bench/stampede/internal/py"
)

// The image and video hf datasets.

// processImage is process_image for a row value: an image stored in the
// dataset ({"bytes": ..., "path": ...}, Hugging Face's Image feature) is
// decoded, flattened onto white if it has alpha (vLLM's rgba_to_rgb),
// and sent as a JPEG data URL; a string is a URL or a file path.
//
// PIL's JPEG encoder (libjpeg, quality 75, 4:2:0) and Go's image/jpeg
// (the same quality and subsampling) produce different bytes, so the data
// URLs differ from Python's while showing the same picture at the same
// size. WebP and other formats Go's standard library does not decode
// are refused with the format named.
func (h *hfRun) processImage(v any) (json.RawMessage, error) {
	switch v := v.(type) {
	case string:
		return mediaPart("image_url", v, true), nil
	case *hfhub.Object:
		data, err := h.imageBytes(v)
		if err != nil {
			return nil, err
		}
		url, err := jpegDataURL(data)
		if err != nil {
			return nil, fmt.Errorf("dataset hf (%s): %w", h.class.name, err)
		}
		return mediaPart("image_url", url, true), nil
	}
	return nil, valueError(fmt.Sprintf("Invalid image input %s. Must be a PIL.Image.Image, str (URL, file path, or base64 data URL), or dictionary with raw image bytes.", pyStr(v)))
}

// imageBytes is the encoded image of an Image feature value: its bytes,
// or the file at its path (relative to the dataset's directory).
func (h *hfRun) imageBytes(o *hfhub.Object) ([]byte, error) {
	if b, ok := o.Get("bytes"); ok && b != nil {
		switch b := b.(type) {
		case []byte:
			return b, nil
		case string:
			return []byte(b), nil
		}
		return nil, &py.Error{Type: "TypeError", Msg: fmt.Sprintf("image \"bytes\" holds %s, want bytes", pyTypeName(b))}
	}
	if p, ok := o.Get("path"); ok {
		if s, ok := p.(string); ok && s != "" {
			if !filepath.IsAbs(s) && h.src != nil && h.src.Root != "" {
				s = filepath.Join(h.src.Root, s)
			}
			return os.ReadFile(s)
		}
	}
	return nil, valueError(fmt.Sprintf("Invalid image input %s. Must be a PIL.Image.Image, str (URL, file path, or base64 data URL), or dictionary with raw image bytes.", pyRepr(o)))
}

// jpegDataURL decodes an encoded image and re-encodes it as a JPEG data
// URL, as process_image does with PIL.
func jpegDataURL(data []byte) (string, error) {
	// The header first: decoders allocate the whole picture up front.
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("image (%s): %v; stampede decodes JPEG, PNG and GIF", sniffImage(data), err)
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > maxImagePixels {
		return "", fmt.Errorf("image (%s): %dx%d is %d pixels, more than the %d PIL refuses as a decompression bomb", format, cfg.Width, cfg.Height, px, maxImagePixels)
	}
	img, format, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("image (%s): %v; stampede decodes JPEG, PNG and GIF", sniffImage(data), err)
	}
	var out bytes.Buffer
	if err := jpeg.Encode(&out, flattenRGB(img), &jpeg.Options{Quality: 75}); err != nil {
		return "", fmt.Errorf("image (%s): JPEG encoding: %v", format, err)
	}
	return "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(out.Bytes()), nil
}

// maxImagePixels is where PIL raises DecompressionBombError: twice
// Image.MAX_IMAGE_PIXELS.
const maxImagePixels = 2 * 89_478_485

// flattenRGB is convert_image_mode(image, "RGB"): an image with alpha is
// pasted onto white through its alpha; others convert directly.
func flattenRGB(img image.Image) image.Image {
	if op, ok := img.(interface{ Opaque() bool }); ok && op.Opaque() {
		return img
	}
	b := img.Bounds()
	dst := image.NewRGBA(b)
	draw.Draw(dst, b, &image.Uniform{C: color.White}, image.Point{}, draw.Src)
	draw.Draw(dst, b, img, b.Min, draw.Over)
	return dst
}

// sniffImage names an image format by its magic bytes, for errors.
func sniffImage(b []byte) string {
	switch {
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "WebP"
	case len(b) >= 3 && b[0] == 0xFF && b[1] == 0xD8:
		return "JPEG"
	case len(b) >= 8 && string(b[1:4]) == "PNG":
		return "PNG"
	case len(b) >= 4 && string(b[:4]) == "GIF8":
		return "GIF"
	case len(b) >= 2 && string(b[:2]) == "BM":
		return "BMP"
	case len(b) >= 4 && (string(b[:4]) == "II*\x00" || string(b[:4]) == "MM\x00*"):
		return "TIFF"
	}
	return "unknown format"
}

// visionArenaClass is VisionArenaDataset: the first user turn's text and
// the first image, 128 output tokens by default.
var visionArenaClass = &hfClass{name: "VisionArenaDataset", paths: []string{"lmarena-ai/VisionArena-Chat", "lmarena-ai/vision-arena-bench-v0.1"},
	split: "train", clearSubset: true, multimodal: true,
	sample: func(h *hfRun) ([]Request, error) {
		column := ""
		switch h.name {
		case "lmarena-ai/VisionArena-Chat":
			column = "conversation"
		case "lmarena-ai/vision-arena-bench-v0.1":
			column = "turns"
		default:
			return nil, valueError("Unsupported dataset path: " + h.name)
		}
		out := h.outputLen(128)
		var reqs []Request
		err := h.each(func(i int, row *hfhub.Object) (bool, error) {
			if len(reqs) >= h.env.NumPrompts {
				return true, nil
			}
			prompt, err := firstTurnContent(row, column)
			if err != nil {
				return true, err
			}
			imgs, err := field(row, "images")
			if err != nil {
				return true, err
			}
			list, _ := imgs.([]any)
			if len(list) == 0 {
				return true, &py.Error{Type: "IndexError", Msg: "list index out of range (column \"images\" is empty)"}
			}
			media, err := h.processImage(list[0])
			if err != nil {
				return true, err
			}
			r := Request{Prompt: prompt, PromptLen: h.tokens(prompt), ExpectedOutputLen: out, RequestID: h.id(i)}
			h.attachMedia(&r, media)
			reqs = append(reqs, r)
			return false, nil
		})
		if err != nil {
			return nil, err
		}
		return h.oversample(reqs)
	}}

// firstTurnContent is x[column][0][0]["content"].
func firstTurnContent(row *hfhub.Object, column string) (string, error) {
	v, err := field(row, column)
	if err != nil {
		return "", err
	}
	outer, _ := v.([]any)
	if len(outer) == 0 {
		return "", &py.Error{Type: "IndexError", Msg: fmt.Sprintf("list index out of range (%s[0])", column)}
	}
	inner := outer[0]
	if l, ok := inner.([]any); ok {
		if len(l) == 0 {
			return "", &py.Error{Type: "IndexError", Msg: fmt.Sprintf("list index out of range (%s[0][0])", column)}
		}
		inner = l[0]
	}
	msg, _ := inner.(*hfhub.Object)
	if msg == nil {
		return "", &py.Error{Type: "TypeError", Msg: fmt.Sprintf("%s[0][0] holds %s, want a message dict", column, pyTypeName(inner))}
	}
	return strField(msg, "content")
}

// mmvuClass is MMVUDataset: the question and its lettered choices, the
// video as a file:// URL into the dataset's snapshot (vLLM rewrites the
// hub URL to the local snapshot; stampede fetches the one video into
// the hub cache when it is missing, where vLLM downloads the whole
// repository). IS_MULTIMODAL is not set on the class, so any backend may
// send it, as in vLLM.
var mmvuClass = &hfClass{name: "MMVUDataset", paths: []string{"yale-nlp/MMVU"}, split: "validation", clearSubset: true,
	sample: func(h *hfRun) ([]Request, error) {
		if h.name != "yale-nlp/MMVU" {
			return nil, valueError("Unsupported dataset path: " + h.name)
		}
		remote := "https://huggingface.co/datasets/" + h.name + "/resolve/main"
		local, err := h.snapshotRoot()
		if err != nil {
			return nil, err
		}
		out := h.outputLen(128)
		var reqs []Request
		err = h.each(func(i int, row *hfhub.Object) (bool, error) {
			if len(reqs) >= h.env.NumPrompts {
				return true, nil
			}
			f := rowFields{row: row}
			q, cv := f.str("question"), f.get("choices")
			if f.err != nil {
				return true, f.err
			}
			choices, _ := cv.(*hfhub.Object)
			if choices == nil {
				return true, &py.Error{Type: "AttributeError", Msg: fmt.Sprintf("'%s' object has no attribute 'items' (column \"choices\")", pyTypeName(cv))}
			}
			parts := make([]string, len(choices.Keys))
			for j, k := range choices.Keys {
				parts[j] = k + "." + pyStr(choices.Fields[k])
			}
			prompt := q + " " + strings.Join(parts, " ")
			video := f.str("video")
			if f.err != nil {
				return true, f.err
			}
			if strings.HasPrefix(video, remote+"/") && h.src != nil && h.src.Root != "" && h.path == h.name {
				// The file must be where the URL will point.
				if _, err := hfhub.FetchFile(h.name, strings.TrimPrefix(video, remote+"/"), h.hub); err != nil {
					return true, fmt.Errorf("dataset hf (MMVUDataset): %w", err)
				}
			}
			video = strings.ReplaceAll(video, remote, local)
			r := Request{Prompt: prompt, PromptLen: h.tokens(prompt), ExpectedOutputLen: out, RequestID: h.id(i)}
			h.attachMedia(&r, mediaPart("video_url", video, false))
			reqs = append(reqs, r)
			return false, nil
		})
		if err != nil {
			return nil, err
		}
		return h.oversample(reqs)
	}}

// snapshotRoot is snapshot_download(hf_name)'s directory: the split's
// own directory for a local copy, else the hub cache's snapshot.
func (h *hfRun) snapshotRoot() (string, error) {
	if h.path != h.name && h.src != nil && h.src.Root != "" {
		return h.src.Root, nil
	}
	root, err := hfhub.SnapshotRoot(h.name, h.hub)
	if err != nil {
		return "", fmt.Errorf("dataset hf: %w", err)
	}
	return root, nil
}

// mmstarClass is MMStarDataset: the question up to "Options:", stripped,
// and the image; 128 output tokens by default. Ids are row positions.
var mmstarClass = &hfClass{name: "MMStarDataset", paths: []string{"Lin-Chen/MMStar"}, split: "val", clearSubset: true, multimodal: true,
	sample: func(h *hfRun) ([]Request, error) {
		out := h.outputLen(128)
		var reqs []Request
		err := h.each(func(i int, row *hfhub.Object) (bool, error) {
			if len(reqs) >= h.env.NumPrompts {
				return true, nil
			}
			full := ""
			if v, ok := row.Get("question"); ok {
				s, isStr := v.(string)
				if !isStr {
					return true, &py.Error{Type: "AttributeError", Msg: fmt.Sprintf("'%s' object has no attribute 'split' (column \"question\")", pyTypeName(v))}
				}
				full = s
			}
			q, _, _ := strings.Cut(full, "Options:")
			q = strings.TrimFunc(q, py.IsSpace)
			img, err := field(row, "image")
			if err != nil {
				return true, err
			}
			media, err := h.processImage(img)
			if err != nil {
				return true, err
			}
			r := Request{Prompt: q, PromptLen: h.tokens(q), ExpectedOutputLen: out, RequestID: h.id(i)}
			h.attachMedia(&r, media)
			reqs = append(reqs, r)
			return false, nil
		})
		if err != nil {
			return nil, err
		}
		return h.oversample(reqs)
	}}
