package chattemplate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// specialTokenNames are transformers' SPECIAL_TOKENS_ATTRIBUTES, the
// tokens special_tokens_map (and so every template render) carries.
var specialTokenNames = []string{
	"bos_token", "eos_token", "unk_token", "sep_token",
	"pad_token", "cls_token", "mask_token", "additional_special_tokens",
}

// Load reads the chat template of the Hugging Face tokenizer at
// tokenizerPath (its tokenizer.json, or the directory holding it):
// chat_template.jinja if the directory has one (the newer layout, which
// wins), else tokenizer_config.json's "chat_template" (a string, or a
// list of {"name", "template"} of which "default" is used). Special
// tokens come from tokenizer_config.json, overridden by
// special_tokens_map.json as transformers does.
func Load(tokenizerPath string) (*Template, error) {
	dir := tokenizerPath
	if info, err := os.Stat(tokenizerPath); err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	} else if !info.IsDir() {
		dir = filepath.Dir(tokenizerPath)
	}
	configPath := filepath.Join(dir, "tokenizer_config.json")
	config, err := readJSONObject(configPath)
	if err != nil {
		return nil, err
	}
	tokens := make(map[string]any)
	addSpecialTokens(tokens, config)
	overrides, err := readJSONObject(filepath.Join(dir, "special_tokens_map.json"))
	if err != nil {
		return nil, err
	}
	addSpecialTokens(tokens, overrides)

	jinjaPath := filepath.Join(dir, "chat_template.jinja")
	src, err := os.ReadFile(jinjaPath)
	switch {
	case err == nil:
		return Parse(jinjaPath, string(src), tokens)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("chat template: %w", err)
	}
	if config == nil {
		return nil, fmt.Errorf("chat template: neither %s nor %s exists", configPath, jinjaPath)
	}
	source, err := configTemplate(configPath, config["chat_template"])
	if err != nil {
		return nil, err
	}
	return Parse(configPath, source, tokens)
}

// readJSONObject reads a JSON object file; a missing file reads as nil,
// since each of the files Load looks at is optional on its own.
func readJSONObject(path string) (map[string]json.RawMessage, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("chat template: %s: %w", path, err)
	}
	return obj, nil
}

// configTemplate picks the template out of tokenizer_config.json's
// "chat_template" value.
func configTemplate(configPath string, raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", fmt.Errorf("chat template: %s has no \"chat_template\" and there is no chat_template.jinja beside it; pass --skip-chat-template or use a tokenizer that ships a chat template", configPath)
	}
	var single string
	if err := json.Unmarshal(raw, &single); err == nil {
		return single, nil
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw, &named); err != nil {
		return "", fmt.Errorf("chat template: %s: \"chat_template\" must be a string or a list of {\"name\", \"template\"} objects: %w", configPath, err)
	}
	names := make([]string, 0, len(named))
	for _, t := range named {
		if t.Name == "default" {
			return t.Template, nil
		}
		names = append(names, t.Name)
	}
	return "", fmt.Errorf("chat template: %s has several chat templates and none is named \"default\" (have %s)", configPath, strings.Join(names, ", "))
}

// addSpecialTokens copies the special tokens in obj into tokens. A token
// is a string or an AddedToken object {"content": ...}; null leaves the
// token unset, as transformers does.
func addSpecialTokens(tokens map[string]any, obj map[string]json.RawMessage) {
	for _, name := range specialTokenNames {
		raw, ok := obj[name]
		if !ok {
			continue
		}
		if name == "additional_special_tokens" {
			var list []json.RawMessage
			if json.Unmarshal(raw, &list) != nil || len(list) == 0 {
				continue
			}
			out := make([]any, 0, len(list))
			for _, item := range list {
				if s, ok := tokenContent(item); ok {
					out = append(out, s)
				}
			}
			tokens[name] = out
			continue
		}
		if s, ok := tokenContent(raw); ok {
			tokens[name] = s
		} else {
			delete(tokens, name)
		}
	}
}

func tokenContent(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var added struct {
		Content *string `json:"content"`
	}
	if json.Unmarshal(raw, &added) == nil && added.Content != nil {
		return *added.Content, true
	}
	return "", false
}
