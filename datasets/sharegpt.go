package datasets

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
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
	raw, err := os.ReadFile(env.Path)
	if err != nil {
		return nil, fmt.Errorf("dataset sharegpt: %w", err)
	}
	var all []json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, fmt.Errorf("dataset sharegpt %s: %s", env.Path, JSONProblem(raw, err, shareGPTShape))
	}
	entries := make([]shareGPTEntry, 0, len(all))
	for i, r := range all {
		if len(r) == 0 || r[0] != '{' {
			continue // not an entry with "conversations"; Python's filter drops it too
		}
		var e shareGPTEntry
		if err := json.Unmarshal(r, &e); err != nil {
			return nil, fmt.Errorf("dataset sharegpt %s: entry %d (from 0): %s", env.Path, i, JSONProblem(r, err, shareGPTShape))
		}
		if len(e.Conversations) >= 2 {
			entries = append(entries, e)
		}
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

var shareGPTDataset = &Dataset{Name: "sharegpt", Sample: SampleShareGPT}
