package datasets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/internal/py"
)

// SampleCustomImage is CustomImageDataset: read the rows, reseed Python's
// random with --seed and shuffle (unless --disable-shuffle), then take the
// first --num-prompts rows (all when <= 0), each asking for
// --custom-output-len tokens (Python's `output_len or 0`). A "prompt" + "image_files" row becomes Prompt plus one
// image_url part per file (file paths become file:// URLs, other URLs are
// kept); with --enable-multimodal-chat the text and images become one user
// chat message instead. A "content" row becomes a user chat message whose
// content is its parts, normalised as Python does. PromptLen is the token
// count (with special tokens) of the prompt, or of a content row's text
// parts joined; 1 without a tokenizer. Ids are the row positions after
// shuffling; too few rows are oversampled.
//
// Python sends a content row's parts as the prompt itself, which the
// openai-chat backend turns into exactly this user message; ChatMessages
// is how stampede carries it. --custom-ensure-client-side-data, which
// would load every image on the client and inline it, is refused.
func SampleCustomImage(env *Env) ([]Request, error) {
	tok := env.Tokenizer
	if env.Flags.CustomEnsureClientSideData {
		return nil, fmt.Errorf("--custom-ensure-client-side-data is not supported yet: stampede sends image references as they are in the file")
	}
	if env.Path == "" {
		return nil, valueError("dataset_path must be provided for loading data.")
	}
	if !strings.HasSuffix(env.Path, ".jsonl") {
		return nil, &py.Error{Type: "NotImplementedError", Msg: "Only JSONL format is supported for CustomImageDataset."}
	}
	rows, err := readCustomImageRows(env.Path)
	if err != nil {
		return nil, err
	}
	random := shuffleRows(env.Globals, env.Seed, env.DisableShuffle, rows)
	n := sampleTarget(env.NumPrompts, len(rows))
	count := func(text string) int {
		if tok == nil {
			return 1
		}
		return len(tok.Encode(nil, text, true))
	}
	var reqs []Request
	for i, row := range rows {
		if len(reqs) >= n {
			break
		}
		r := Request{ExpectedOutputLen: env.Flags.CustomOutputLen, RequestID: env.RequestIDPrefix + strconv.Itoa(i)}
		if raw, ok := row.values["content"]; ok {
			parts, text, err := contentParts(raw)
			if err != nil {
				return nil, err
			}
			r.PromptLen = count(text)
			r.ChatMessages = userContentMessage(parts)
			reqs = append(reqs, r)
			continue
		}
		var prompt string
		if json.Unmarshal(row.values["prompt"], &prompt) != nil {
			return nil, valueError("'prompt' must be a string.")
		}
		var files []json.RawMessage
		if json.Unmarshal(row.values["image_files"], &files) != nil || len(files) == 0 {
			return nil, valueError("'image_files' must be a non-empty list.")
		}
		media := make([]json.RawMessage, len(files))
		for k, f := range files {
			if media[k], err = imagePart(f); err != nil {
				return nil, err
			}
		}
		r.PromptLen = count(prompt)
		if env.EnableMultimodalChat {
			r.ChatMessages = userChatMessages(prompt, media...)
		} else {
			r.Prompt, r.MultiModal = prompt, media
		}
		reqs = append(reqs, r)
	}
	return maybeOversample(reqs, n, env.RequestIDPrefix, env.NoOversample, env.Seed, random)
}

// readCustomImageRows is CustomImageDataset.load_data: one JSON object per
// non-blank line, each with "prompt" and "image_files" or with "content".
func readCustomImageRows(path string) ([]traceEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset custom_image: %w", err)
	}
	defer f.Close()
	var rows []traceEntry
	lines := newJSONLines(f)
	for lines.next() {
		line, text := lines.line, lines.text
		if !json.Valid(text) {
			var v any
			err := json.Unmarshal(text, &v)
			return nil, valueError(fmt.Sprintf("Invalid JSON in custom image dataset line %d: %s", line, JSONProblem(text, err, "a JSON object")))
		}
		if text[0] != '{' {
			return nil, valueError(fmt.Sprintf("Each custom image dataset line must contain a JSON object. Found %s on line %d.", pyTypeOfJSON(text), line))
		}
		row, err := parseTraceEntry(text)
		if err != nil {
			return nil, valueError(fmt.Sprintf("Invalid JSON in custom image dataset line %d: %v", line, err))
		}
		_, hasPrompt := row.values["prompt"]
		_, hasFiles := row.values["image_files"]
		if _, hasContent := row.values["content"]; !hasContent && !(hasPrompt && hasFiles) {
			return nil, valueError(fmt.Sprintf("Each custom image dataset line must contain either 'prompt' and 'image_files' fields, "+
				"or a 'content' field. Invalid line: %d.", line))
		}
		rows = append(rows, row)
	}
	if err := lines.err(); err != nil {
		return nil, fmt.Errorf("dataset custom_image %s: %w", path, err)
	}
	return rows, nil
}

// contentParts is _process_interleaved_content plus _get_text_from_content:
// the parts in Python's normal form and the text parts joined.
func contentParts(raw json.RawMessage) ([]json.RawMessage, string, error) {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil || string(raw) == "null" {
		return nil, "", valueError("'content' must be a list of text and image content dictionaries.")
	}
	if len(items) == 0 {
		return nil, "", valueError("'content' must contain at least one item.")
	}
	parts := make([]json.RawMessage, len(items))
	var text strings.Builder
	for i, item := range items {
		if len(item) == 0 || item[0] != '{' {
			return nil, "", valueError(fmt.Sprintf("Each item in 'content' must be a dictionary. Found %s.", pyTypeOfJSON(item)))
		}
		part, err := parseTraceEntry(item)
		if err != nil {
			return nil, "", err
		}
		var kind string
		typeRaw, hasType := part.values["type"]
		if hasType {
			_ = json.Unmarshal(typeRaw, &kind)
		}
		switch {
		case kind == "text":
			var s string
			if json.Unmarshal(part.values["text"], &s) != nil {
				return nil, "", valueError("Text content parts must contain a string 'text'.")
			}
			parts[i] = textPart(s)
			text.WriteString(s)
		case kind == "image":
			img, ok := part.values["image"]
			if !ok {
				return nil, "", valueError("Image content parts must contain an 'image' field.")
			}
			if parts[i], err = imagePart(img); err != nil {
				return nil, "", err
			}
		case kind == "image_url":
			if parts[i], err = imageURLContentPart(part.values["image_url"]); err != nil {
				return nil, "", err
			}
		default:
			found := "None"
			if hasType && string(typeRaw) != "null" {
				found = pyValueRepr(typeRaw)
			}
			return nil, "", valueError("Content parts must have type 'text', 'image', or 'image_url'. Found: " + found + ".")
		}
	}
	return parts, text.String(), nil
}

// imageURLContentPart normalises an image_url part: a string is an image
// reference; an object's "url" is, and its other keys ("detail", ...)
// follow it.
func imageURLContentPart(raw json.RawMessage) (json.RawMessage, error) {
	var ref string
	if json.Unmarshal(raw, &ref) == nil {
		return imagePart(raw)
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, valueError("Image URL content parts must contain an 'image_url' string or dictionary.")
	}
	obj, err := parseTraceEntry(raw)
	if err != nil {
		return nil, err
	}
	if json.Unmarshal(obj.values["url"], &ref) != nil {
		return nil, valueError("Image URL content parts must contain a string 'image_url.url'.")
	}
	var b bytes.Buffer
	b.WriteString(`{"type":"image_url","image_url":{"url":`)
	b.Write(jsonString(imageURL(ref)))
	for _, k := range obj.keys {
		if k == "url" {
			continue
		}
		b.WriteByte(',')
		b.Write(jsonString(k))
		b.WriteByte(':')
		b.Write(obj.values[k])
	}
	b.WriteString("}}")
	return b.Bytes(), nil
}

// imagePart is process_image for a value read from JSON: only strings
// (paths, URLs, data URLs) are images there.
func imagePart(raw json.RawMessage) (json.RawMessage, error) {
	var ref string
	if json.Unmarshal(raw, &ref) != nil {
		return nil, valueError(fmt.Sprintf("Invalid image input %s. Must be a PIL.Image.Image, str (URL, file path, or base64 data URL), "+
			"or dictionary with raw image bytes.", raw))
	}
	return mediaPart("image_url", ref, true), nil
}

// imageURL is process_image's URL for a string reference.
func imageURL(ref string) string {
	for _, s := range []string{"http://", "https://", "file://", "data:image/"} {
		if strings.HasPrefix(ref, s) {
			return ref
		}
	}
	return "file://" + ref
}

func textPart(s string) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"type":"text","text":`)
	b.Write(jsonString(s))
	b.WriteByte('}')
	return b.Bytes()
}

// userContentMessage is [{"role": "user", "content": parts}].
func userContentMessage(parts []json.RawMessage) json.RawMessage {
	msg := struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	}{"user", parts}
	b, _ := json.Marshal([]any{msg})
	return b
}

func jsonString(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// pyTypeOfJSON is str(type(json.loads(raw))).
func pyTypeOfJSON(raw []byte) string {
	switch t := strings.TrimSpace(string(raw)); {
	case strings.HasPrefix(t, "["):
		return "<class 'list'>"
	case strings.HasPrefix(t, "{"):
		return "<class 'dict'>"
	case strings.HasPrefix(t, `"`):
		return "<class 'str'>"
	case t == "true" || t == "false":
		return "<class 'bool'>"
	case t == "null":
		return "<class 'NoneType'>"
	case strings.ContainsAny(t, ".eE"):
		return "<class 'float'>"
	default:
		return "<class 'int'>"
	}
}

// pyValueRepr is repr() of a JSON value as json.loads returns it.
func pyValueRepr(raw json.RawMessage) string {
	n, err := py.Loads(string(raw))
	if err != nil {
		return string(raw)
	}
	return n.Repr()
}

var customImageDataset = &Dataset{Name: "custom_image", Stream: sampled(SampleCustomImage)}
