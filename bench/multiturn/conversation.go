package multiturn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Conversation is a session's script: an optional leading system message,
// then user turns, each followed by the dataset's answer where it has one.
type Conversation struct {
	ID       string    `json:"id"`
	Messages []Message `json:"messages"`
}

// Turns is the number of user turns.
func (c *Conversation) Turns() int {
	n := 0
	for _, m := range c.Messages {
		if m.Role == "user" {
			n++
		}
	}
	return n
}

// turnAt returns the index in Messages of user turn k (0-based) and the
// dataset's answer to it ("", false when the conversation ends there).
func (c *Conversation) turnAt(k int) (user int, answer string, ok bool) {
	for i, m := range c.Messages {
		if m.Role != "user" {
			continue
		}
		if k > 0 {
			k--
			continue
		}
		if i+1 < len(c.Messages) && c.Messages[i+1].Role == "assistant" {
			return i, c.Messages[i+1].Content, true
		}
		return i, "", false
	}
	return -1, "", false
}

// shareGPTRoles maps the raw ShareGPT "from" values to chat roles.
var shareGPTRoles = map[string]string{
	"human": "user", "user": "user",
	"gpt": "assistant", "chatgpt": "assistant", "bard": "assistant", "bing": "assistant", "assistant": "assistant",
	"system": "system",
}

// fileItem is one entry of a conversations file, in either form: vLLM's
// multi-turn tool's {"id", "messages": [{"role", "content"}]}, or raw
// ShareGPT's {"id", "conversations": [{"from", "value"}]}.
type fileItem struct {
	ID            *string   `json:"id"`
	Messages      []Message `json:"messages"`
	Conversations []struct {
		From  string `json:"from"`
		Value string `json:"value"`
	} `json:"conversations"`
}

// Input is what --input-file holds: conversations, or the configuration
// of synthetic ones.
type Input struct {
	Conversations []Conversation
	Synthetic     *SynthConfig
}

// ReadInput reads --input-file: a JSON list of conversations, or a JSON
// object with "filetype": "generate_conversations" configuring synthetic
// ones (vLLM's generate_multi_turn.json). Errors name the file, the entry
// and the field.
func ReadInput(path string) (*Input, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--input-file %s: %w", path, err)
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	switch {
	case len(trimmed) > 0 && trimmed[0] == '[':
		convs, err := parseConversations(data)
		if err != nil {
			return nil, fmt.Errorf("--input-file %s: %w", path, err)
		}
		return &Input{Conversations: convs}, nil
	case len(trimmed) > 0 && trimmed[0] == '{':
		cfg, err := ParseSynthConfig(data)
		if err != nil {
			return nil, fmt.Errorf("--input-file %s: %w", path, err)
		}
		cfg.dir = filepath.Dir(path)
		return &Input{Synthetic: cfg}, nil
	}
	return nil, fmt.Errorf("--input-file %s: want a JSON list of conversations or a JSON object configuring synthetic ones (\"filetype\": \"generate_conversations\")", path)
}

// parseConversations reads a JSON list of conversations and checks each:
// an id, unique; messages whose roles go (system,) user, assistant, user,
// ... with at least one user turn.
func parseConversations(data []byte) ([]Conversation, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		return nil, fmt.Errorf("not a JSON list: %v", err)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("the list has no conversations")
	}
	seen := make(map[string]int, len(items))
	convs := make([]Conversation, 0, len(items))
	for i, raw := range items {
		var it fileItem
		if err := json.Unmarshal(raw, &it); err != nil {
			return nil, fmt.Errorf("entry %d: want an object with \"id\" and \"messages\" (or ShareGPT's \"conversations\"): %v", i, err)
		}
		c := Conversation{ID: fmt.Sprintf("conv-%d", i), Messages: it.Messages}
		if it.ID != nil {
			c.ID = *it.ID
		}
		if c.Messages == nil {
			for j, m := range it.Conversations {
				role, ok := shareGPTRoles[m.From]
				if !ok {
					return nil, fmt.Errorf("entry %d (id %q): conversations[%d].from %q: want human, gpt or system", i, c.ID, j, m.From)
				}
				c.Messages = append(c.Messages, Message{Role: role, Content: m.Value})
			}
		}
		if j, dup := seen[c.ID]; dup {
			return nil, fmt.Errorf("entry %d: id %q is also entry %d's; conversation ids must be unique", i, c.ID, j)
		}
		seen[c.ID] = i
		if err := checkRoles(c.Messages); err != nil {
			return nil, fmt.Errorf("entry %d (id %q): %v", i, c.ID, err)
		}
		convs = append(convs, c)
	}
	return convs, nil
}

// checkRoles accepts (system,) user, assistant, user, ...: each user turn
// answered by at most one assistant message, the last answer optional.
func checkRoles(msgs []Message) error {
	if len(msgs) == 0 {
		return fmt.Errorf("no messages")
	}
	start := 0
	if msgs[0].Role == "system" {
		start = 1
	}
	if start == len(msgs) {
		return fmt.Errorf("only a system message; want at least one user turn")
	}
	for i := start; i < len(msgs); i++ {
		want := "user"
		if (i-start)%2 == 1 {
			want = "assistant"
		}
		if msgs[i].Role != want {
			return fmt.Errorf("messages[%d].role %q: want %q (roles alternate user, assistant, ... after an optional system message)", i, msgs[i].Role, want)
		}
	}
	return nil
}
