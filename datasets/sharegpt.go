package datasets

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/datasets/hfhub"
)

type shareGPTEntry struct {
	Conversations []struct {
		Value string `json:"value"`
	} `json:"conversations"`
	Image string `json:"image"`
	Video string `json:"video"`
}

// shareGPTShape is what a ShareGPT file holds, for error messages.
const shareGPTShape = `a JSON list of entries such as {"conversations": [{"from": "human", "value": "..."}, {"from": "gpt", "value": "..."}]}`

// MaxShareGPTEntryBytes bounds one ShareGPT entry (one conversation) as
// JSON. An entry is text (its media are paths or URLs), and 16 MiB of
// text is some 4 million tokens: far past any model's context, while the
// dataset sends prompts of at most 1,024 tokens. A longer entry is a
// broken or hostile file (a missing quote that swallows the rest), refused
// by name before it is decoded whole.
const MaxShareGPTEntryBytes = 16 << 20

// readShareGPT reads path's entries with two or more turns, a list item
// at a time (the file is never held whole), keeping of each its first
// two turns (all that is sent), its image and its video.
func readShareGPT(path string) ([]shareGPTEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset sharegpt: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	// The file's start, for the place of an error in its first value.
	head, _ := br.Peek(1 << 16)
	head = bytes.Clone(head)
	list, err := hfhub.NewJSONList(br, MaxShareGPTEntryBytes)
	var notList *hfhub.NotAListError
	switch {
	case errors.As(err, &notList) && notList.Kind == "null":
		return nil, nil // json.loads gives None, which holds no entry
	case errors.As(err, &notList):
		return nil, fmt.Errorf("dataset sharegpt %s: found %s; want %s", path, jsonKindName(notList.Kind), shareGPTShape)
	case err != nil:
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			err = json.Unmarshal(head, new(any)) // the same error, placed in the file
		}
		return nil, fmt.Errorf("dataset sharegpt %s: %s", path, JSONProblem(head, err, shareGPTShape))
	}
	var entries []shareGPTEntry
	for {
		var raw json.RawMessage
		more, err := list.Next(func(dec *json.Decoder) error { return dec.Decode(&raw) })
		var long *hfhub.ItemTooLargeError
		switch {
		case errors.As(err, &long):
			return nil, fmt.Errorf("dataset sharegpt %s: entry %d (from 0) is longer than %d MiB, the most stampede reads as one conversation "+
				"(is a quote missing before it?)", path, long.Index, long.Limit>>20)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, fmt.Errorf("dataset sharegpt %s: %s", path, JSONProblem(nil, err, shareGPTShape))
		case err != nil:
			// The decoder's offsets are not the file's: the entry places it.
			return nil, fmt.Errorf("dataset sharegpt %s: not valid JSON at entry %d (from 0): %s; want %s",
				path, list.Index(), strings.TrimPrefix(err.Error(), "invalid "), shareGPTShape)
		case !more:
			return entries, nil
		}
		if len(raw) == 0 || raw[0] != '{' {
			continue // not an entry with "conversations"; Python's filter drops it too
		}
		var e shareGPTEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("dataset sharegpt %s: entry %d (from 0): %s", path, list.Index(), JSONProblem(raw, err, shareGPTShape))
		}
		if len(e.Conversations) >= 2 {
			// A copy, so that the later turns' text is not kept alive.
			e.Conversations = slices.Clone(e.Conversations[:2])
			entries = append(entries, e)
		}
	}
}

// SampleShareGPT is ShareGPTDataset: keep entries with at least two turns,
// reseed Python's random with --seed and shuffle (unless
// --disable-shuffle), then accept entries in order while they pass
// is_valid_sequence: prompt 4..1024 tokens, completion >= 4 tokens unless
// --sharegpt-output-len is set, sum <= 2048 (tokens counted with special
// tokens). Ids count accepted entries. Too few accepted entries are
// oversampled.
func SampleShareGPT(env *Env) ([]Request, error) {
	tok := env.Tokenizer
	if tok == nil {
		return nil, fmt.Errorf("dataset sharegpt: a tokenizer is required (drop --skip-tokenizer-init)")
	}
	if env.Path == "" {
		return nil, valueError("dataset_path must be provided for loading data.")
	}
	entries, err := readShareGPT(env.Path)
	if err != nil {
		return nil, err
	}
	random := shuffleRows(env.Globals, env.Seed, env.DisableShuffle, entries)

	var reqs []Request
	for _, e := range entries {
		if len(reqs) >= env.NumPrompts {
			break
		}
		prompt, completion := e.Conversations[0].Value, e.Conversations[1].Value
		promptLen := len(tok.Encode(nil, prompt, true))
		outLen := 0
		if env.Flags.SharegptOutputLen != nil {
			outLen = *env.Flags.SharegptOutputLen
		} else {
			outLen = len(tok.Encode(nil, completion, true))
		}
		if !isValidSequence(promptLen, outLen, env.Flags.SharegptOutputLen != nil) {
			continue
		}
		r := Request{Prompt: prompt, PromptLen: promptLen, ExpectedOutputLen: outLen, RequestID: env.RequestIDPrefix + strconv.Itoa(len(reqs))}
		var media json.RawMessage
		switch {
		case e.Image != "":
			media = mediaPart("image_url", e.Image, true)
		case e.Video != "":
			media = mediaPart("video_url", e.Video, false)
		}
		if env.EnableMultimodalChat {
			r.ChatMessages = userChatMessages(prompt, media)
			r.Prompt = ""
		} else if media != nil {
			r.MultiModal = []json.RawMessage{media}
		}
		reqs = append(reqs, r)
	}
	return maybeOversample(reqs, env.NumPrompts, env.RequestIDPrefix, env.NoOversample, env.Seed, random)
}

// isValidSequence is Python's is_valid_sequence with its defaults.
func isValidSequence(promptLen, outputLen int, skipMinOutput bool) bool {
	const minLen, maxPrompt, maxTotal = 4, 1024, 2048
	return promptLen >= minLen && (skipMinOutput || outputLen >= minLen) &&
		promptLen <= maxPrompt && promptLen+outputLen <= maxTotal
}

// mediaPart is process_image / process_video for a path or URL string:
// anything that is not already a URL becomes file://path. Key order is
// Python's: "type", then the part itself.
func mediaPart(kind, ref string, image bool) json.RawMessage {
	schemes := []string{"http://", "https://", "file://"}
	if image {
		schemes = append(schemes, "data:image/")
	}
	url := "file://" + ref
	for _, s := range schemes {
		if strings.HasPrefix(ref, s) {
			url = ref
			break
		}
	}
	type urlRef struct {
		URL string `json:"url"`
	}
	part := struct {
		Type     string  `json:"type"`
		ImageURL *urlRef `json:"image_url,omitempty"`
		VideoURL *urlRef `json:"video_url,omitempty"`
	}{Type: kind}
	if kind == "image_url" {
		part.ImageURL = &urlRef{url}
	} else {
		part.VideoURL = &urlRef{url}
	}
	b, _ := json.Marshal(part)
	return b
}

// userChatMessages is apply_multimodal_chat_transformation:
// [{"role": "user", "content": [{"text": prompt, "type": "text"}, media...]}],
// keys in Python's insertion order.
func userChatMessages(prompt string, media ...json.RawMessage) json.RawMessage {
	type textPart struct {
		Text string `json:"text"`
		Type string `json:"type"`
	}
	content := []any{textPart{prompt, "text"}}
	for _, m := range media {
		if m != nil {
			content = append(content, m)
		}
	}
	msg := struct {
		Role    string `json:"role"`
		Content []any  `json:"content"`
	}{"user", content}
	b, _ := json.Marshal([]any{msg})
	return b
}

// ShareGPTFlags are the sharegpt dataset's options.
type ShareGPTFlags struct {
	SharegptOutputLen *int `long:"sharegpt-output-len" copy-of:"output-len" description:"Output tokens per request (default: the length of the recorded answer)."`
}

var shareGPTDataset = &Dataset{Name: "sharegpt", Stream: sampled(SampleShareGPT)}
