package sse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// pythonStream replays, step by step, what `vllm bench serve` does with the
// reads of one streaming response (StreamedResponseHandler.add_chunk and the
// loop of async_request_openai_completions / _chat_completions), to serve as
// an oracle for token-event parity.
func pythonStream(kind Kind, reads [][]byte) (streamResult, error) {
	var res streamResult
	var text strings.Builder
	buffer := ""
	for _, read := range reads {
		read = bytes.Trim(read, " \t\n\r\v\f") // bytes.strip()
		if len(read) == 0 {
			continue
		}
		buffer += string(read)
		var messages []string
		for {
			i := strings.Index(buffer, "\n\n")
			if i < 0 {
				break
			}
			msg := strings.TrimSpace(buffer[:i])
			buffer = buffer[i+2:]
			if msg != "" {
				messages = append(messages, msg)
			}
		}
		if strings.HasPrefix(buffer, "data: ") {
			content := strings.TrimSpace(strings.TrimPrefix(buffer, "data: "))
			if content == "[DONE]" || content != "" && json.Valid([]byte(content)) {
				messages = append(messages, strings.TrimSpace(buffer))
				buffer = ""
			}
		}
		for _, msg := range messages {
			if strings.HasPrefix(msg, ":") {
				continue
			}
			chunk := strings.TrimPrefix(msg, "data: ")
			if chunk == "[DONE]" {
				res.done = true
				continue
			}
			var data map[string]any
			if err := json.Unmarshal([]byte(chunk), &data); err != nil {
				return res, fmt.Errorf("json.loads(%q): %v", chunk, err)
			}
			if choices, _ := data["choices"].([]any); len(choices) > 0 {
				first := choices[0].(map[string]any)
				t := first["text"]
				if kind == Chat {
					t = first["delta"].(map[string]any)["content"]
				}
				res.tokens++
				if s, ok := t.(string); ok {
					text.WriteString(s)
				}
			} else if usage, _ := data["usage"].(map[string]any); len(usage) > 0 {
				res.usages++
				res.prompt = int64(usage["prompt_tokens"].(float64))
				res.completion = int64(usage["completion_tokens"].(float64))
			}
		}
	}
	res.text = text.String()
	if buffer != "" {
		// Never emitted: a read boundary right after "data:" lost the space
		// to bytes.strip(), so the trailing event no longer starts with
		// "data: ". Python drops it without failing the request.
		return res, errDropped
	}
	return res, nil
}

var errDropped = errors.New("the Python assembler dropped the unterminated tail of the body")

// TestGoldenMatchesPython: on the golden vLLM streams our Parser and Decoder
// count the same token events and usage as Python, read by read. With one
// event per read (how a server writing one event per decode step is read)
// the text matches too; with arbitrary splits Python's per-read whitespace
// stripping can drop spaces from the text or fail the request outright
// or drop the last events (see the package doc), so only counts are
// compared, and only where Python neither failed nor dropped events.
func TestGoldenMatchesPython(t *testing.T) {
	for _, g := range goldenStreams {
		t.Run(g.file, func(t *testing.T) {
			stream := g.render(goldenTokens)
			perEvent := bytes.SplitAfter(stream, []byte("\n\n"))
			want, err := pythonStream(g.kind, perEvent)
			if err != nil {
				t.Fatalf("Python oracle failed on one event per read: %v", err)
			}
			var cuts []int
			for i, n := 0, 0; i < len(perEvent)-1; i++ {
				n += len(perEvent[i])
				cuts = append(cuts, n)
			}
			if got := consume(g.kind, stream, cuts); got != want {
				t.Fatalf("one event per read:\n ours   %+v\n Python %+v", got, want)
			}

			rng := rand.New(rand.NewPCG(5, 8))
			const splits = 1000
			compared, dropped := 0, 0
			for range splits {
				var cuts []int // a few reads of up to 1 KiB, as at a modest stream rate
				for c := 1 + rng.IntN(1024); c < len(stream); c += 1 + rng.IntN(1024) {
					cuts = append(cuts, c)
				}
				py, err := pythonStream(g.kind, split(stream, cuts))
				if errors.Is(err, errDropped) {
					dropped++
				}
				if err != nil {
					continue
				}
				compared++
				got := consume(g.kind, stream, cuts)
				if got.err != nil || got.tokens != py.tokens || got.usages != py.usages ||
					got.prompt != py.prompt || got.completion != py.completion {
					t.Fatalf("cuts %v:\n ours   %+v\n Python %+v", cuts, got, py)
				}
			}
			if compared < splits*3/4 {
				t.Fatalf("Python oracle failed on %d of %d random splits; too few compared", splits-compared, splits)
			}
			t.Logf("compared %d of %d splits; Python failed on %d and silently dropped the last events on %d", compared, splits, splits-compared-dropped, dropped)
		})
	}
}
