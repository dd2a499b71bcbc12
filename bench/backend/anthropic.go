package backend

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/internal/py"
)

// --backend anthropic-messages: the Anthropic Messages API (POST
// /v1/messages), which vLLM, SGLang, llama.cpp and Ollama serve beside the
// OpenAI APIs. Python has no such backend; the body follows the chat
// backend's, in the Messages API's words:
//
//	{"model", "max_tokens": output_len, "system": ..., "messages": [...], "stream": true}
//
// then, as for every OpenAI-compatible backend, "ignore_eos" and the extra
// body (sampling parameters, --extra-body, the dataset's overrides), which
// may override any key. "system" is there only when the dataset's messages
// have a system prompt.
//
// The messages are the chat backend's, translated: a dataset's chat
// messages with their system messages taken out into "system", their
// string contents as they are and their content parts as blocks (a text
// part a text block, an image_url part an image block: a base64 source
// from a data: URL, else a url source); without chat messages, one user
// message whose content is the prompt, or, with media, the prompt's text
// block followed by the media's image blocks (the chat backend's order,
// so both send the model the same prompt). Parts the Messages API has no
// block for (video, audio) and prompts of token ids are refused with the
// request's id.
//
// A dataset's tools (BFCL) come in the OpenAI form, in the request's
// overrides: each {"type": "function", "function": {name, description,
// parameters}} element of "tools" becomes {name, description,
// input_schema}, and "tool_choice" "auto", "required", "none" or a named
// function becomes {"type": "auto" | "any" | "none" | "tool", "name"}.
// Tools already in the Anthropic form, from --extra-body say, go as they
// are.

// anthropicVersion is the anthropic-version header every Messages request
// carries: the API version the body is written for.
const anthropicVersion = "2023-06-01"

// anthropicKey is where the Messages API's key comes from and goes:
// $ANTHROPIC_API_KEY, else $OPENAI_API_KEY (the servers that speak both
// APIs take one key), in an x-api-key header.
var anthropicKey = apiKeyRule{env: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"}, header: "x-api-key"}

// anthropicEndpoint is the backend's --endpoint when none is given.
const anthropicEndpoint = "/v1/messages"

// setAnthropicBody fills the body of --backend anthropic-messages up to
// "stream"; the caller adds ignore_eos and the extra body.
func setAnthropicBody(body *plan.JSONObject, req *datasets.Request) error {
	if req.PromptIDs != nil || req.PromptList != nil {
		return fmt.Errorf("--backend anthropic-messages: request %q has a prompt of token ids or a list of prompts; the Messages API takes text messages (use a text dataset, or --backend openai)", req.RequestID)
	}
	system, messages, err := anthropicMessages(req)
	if err != nil {
		return fmt.Errorf("--backend anthropic-messages: request %q: %w", req.RequestID, err)
	}
	body.Set("max_tokens", []byte(strconv.Itoa(req.ExpectedOutputLen)))
	if system != nil {
		body.Set("system", encodePy(system))
	}
	body.Set("messages", encodePy(messages))
	body.Set("stream", []byte("true"))
	return nil
}

// anthropicMessages returns the request's system prompt (nil for none)
// and its messages, as the Messages API takes them.
func anthropicMessages(req *datasets.Request) (system, messages *py.JSONValue, err error) {
	messages = &py.JSONValue{Kind: py.JSONArray}
	if req.ChatMessages == nil {
		content := pyStr(req.Prompt)
		if len(req.MultiModal) > 0 {
			content = &py.JSONValue{Kind: py.JSONArray, Items: []*py.JSONValue{textBlock(req.Prompt)}}
			for i, raw := range req.MultiModal {
				part, err := py.Loads(string(raw))
				if err != nil {
					return nil, nil, fmt.Errorf("media item %d: %w", i, err)
				}
				block, err := anthropicBlock(part)
				if err != nil {
					return nil, nil, fmt.Errorf("media item %d: %w", i, err)
				}
				content.Items = append(content.Items, block)
			}
		}
		messages.Items = append(messages.Items, message("user", content))
		return nil, messages, nil
	}
	list, err := py.Loads(string(req.ChatMessages))
	if err != nil {
		return nil, nil, fmt.Errorf("chat messages: %w", err)
	}
	if list.Kind != py.JSONArray {
		return nil, nil, fmt.Errorf("chat messages are a JSON %s, not a list", list.Kind.TypeName(list.Raw))
	}
	var systemBlocks []*py.JSONValue
	for i, m := range list.Items {
		role, content, err := messageParts(m)
		if err != nil {
			return nil, nil, fmt.Errorf("message %d: %w", i, err)
		}
		if content.Kind == py.JSONArray {
			blocks := &py.JSONValue{Kind: py.JSONArray}
			for j, part := range content.Items {
				block, err := anthropicBlock(part)
				if err != nil {
					return nil, nil, fmt.Errorf("message %d, content part %d: %w", i, j, err)
				}
				blocks.Items = append(blocks.Items, block)
			}
			content = blocks
		}
		if role != "system" {
			messages.Items = append(messages.Items, message(role, content))
			continue
		}
		if content.Kind == py.JSONString {
			content = &py.JSONValue{Kind: py.JSONArray, Items: []*py.JSONValue{textBlock(content.Text)}}
		}
		for j, block := range content.Items {
			if t := block.Get("type"); t == nil || t.Text != "text" {
				return nil, nil, fmt.Errorf("message %d (system), content part %d: a system prompt holds text alone", i, j)
			}
		}
		systemBlocks = append(systemBlocks, content.Items...)
	}
	switch {
	case len(systemBlocks) == 1:
		system = systemBlocks[0].Get("text")
	case len(systemBlocks) > 1:
		system = &py.JSONValue{Kind: py.JSONArray, Items: systemBlocks}
	}
	return system, messages, nil
}

// messageParts checks a chat message and returns its role and content (a
// string, or a list of parts). The Messages API has user and assistant
// turns and a system prompt, and a message holds its role and content
// alone: anything else (a tool turn, an assistant's tool calls) has no
// faithful translation here.
func messageParts(m *py.JSONValue) (role string, content *py.JSONValue, err error) {
	if m.Kind != py.JSONObject {
		return "", nil, fmt.Errorf("a JSON %s, not a {\"role\", \"content\"} object", m.Kind.TypeName(m.Raw))
	}
	for key := range m.Members.All() {
		if key != "role" && key != "content" {
			return "", nil, fmt.Errorf("key %q: the Messages API's messages hold a role and a content alone", key)
		}
	}
	r := m.Get("role")
	if r == nil || r.Kind != py.JSONString {
		return "", nil, fmt.Errorf("no \"role\" string")
	}
	switch r.Text {
	case "system", "user", "assistant":
	default:
		return "", nil, fmt.Errorf("role %q: the Messages API has user and assistant turns and a system prompt", r.Text)
	}
	content = m.Get("content")
	if content == nil || (content.Kind != py.JSONString && content.Kind != py.JSONArray) {
		return "", nil, fmt.Errorf("the content is not a string or a list of parts")
	}
	return r.Text, content, nil
}

// anthropicBlock is the content block of one OpenAI content part: a text
// part's text, an image_url part's image (a base64 source from a data:
// URL, else a url source); a part already in the Messages API's form
// (image, document) goes as it is.
func anthropicBlock(part *py.JSONValue) (*py.JSONValue, error) {
	if part.Kind != py.JSONObject {
		return nil, fmt.Errorf("a JSON %s, not a content part object", part.Kind.TypeName(part.Raw))
	}
	t := part.Get("type")
	if t == nil || t.Kind != py.JSONString {
		return nil, fmt.Errorf("a content part without a \"type\" string")
	}
	switch t.Text {
	case "text":
		text := part.Get("text")
		if text == nil || text.Kind != py.JSONString {
			return nil, fmt.Errorf("a text part without a \"text\" string")
		}
		return textBlock(text.Text), nil
	case "image_url":
		url := part.Get("image_url")
		if url != nil && url.Kind == py.JSONObject {
			url = url.Get("url")
		}
		if url == nil || url.Kind != py.JSONString {
			return nil, fmt.Errorf("an image_url part without an image_url.url string")
		}
		return imageBlock(url.Text)
	case "image", "document":
		return part, nil
	}
	return nil, fmt.Errorf("a %q part, which has no Messages API block (text and images are sent)", t.Text)
}

// imageBlock is the image block of an image URL: a data: URL's base64
// bytes with their media type, any other URL as a url source.
func imageBlock(url string) (*py.JSONValue, error) {
	source := &py.JSONValue{Kind: py.JSONObject}
	if rest, ok := strings.CutPrefix(url, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		mediaType, isBase64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isBase64 || mediaType == "" {
			return nil, fmt.Errorf("image data URL %q: want data:<media type>;base64,<data>", abbreviate(url))
		}
		source.Set("type", pyStr("base64"))
		source.Set("media_type", pyStr(mediaType))
		source.Set("data", pyStr(data))
	} else {
		source.Set("type", pyStr("url"))
		source.Set("url", pyStr(url))
	}
	block := &py.JSONValue{Kind: py.JSONObject}
	block.Set("type", pyStr("image"))
	block.Set("source", source)
	return block, nil
}

// abbreviate cuts a long URL for a message.
func abbreviate(s string) string {
	if len(s) <= 48 {
		return s
	}
	return s[:48] + "..."
}

func textBlock(text string) *py.JSONValue {
	b := &py.JSONValue{Kind: py.JSONObject}
	b.Set("type", pyStr("text"))
	b.Set("text", pyStr(text))
	return b
}

func message(role string, content *py.JSONValue) *py.JSONValue {
	m := &py.JSONValue{Kind: py.JSONObject}
	m.Set("role", pyStr(role))
	m.Set("content", content)
	return m
}

func pyStr(s string) *py.JSONValue { return &py.JSONValue{Kind: py.JSONString, Text: s} }

// encodePy is json.dumps of a parsed value.
func encodePy(v *py.JSONValue) []byte {
	var b bytes.Buffer
	v.EncodePy(&b)
	return b.Bytes()
}

// anthropicTools rewrites the extra body's OpenAI tools and tool_choice
// into the Messages API's form (see the top of this file); values in any
// other form are left as they are.
func anthropicTools(extra plan.JSONObject) (plan.JSONObject, error) {
	out := extra.Clone()
	for _, key := range []string{"tools", "tool_choice"} {
		raw, ok := extra.Get(key)
		if !ok {
			continue
		}
		v, err := py.Loads(string(raw))
		if err != nil {
			return out, fmt.Errorf("extra body key %q: %w", key, err)
		}
		if key == "tools" {
			v = anthropicToolList(v)
		} else {
			v = anthropicToolChoice(v)
		}
		var b bytes.Buffer
		v.Encode(&b)
		out.Set(key, b.Bytes())
	}
	return out, nil
}

// anthropicToolList translates each OpenAI function tool of a tool list.
func anthropicToolList(tools *py.JSONValue) *py.JSONValue {
	if tools.Kind != py.JSONArray {
		return tools
	}
	out := &py.JSONValue{Kind: py.JSONArray}
	for _, tool := range tools.Items {
		fn := openAIFunction(tool)
		if fn == nil {
			out.Items = append(out.Items, tool)
			continue
		}
		t := &py.JSONValue{Kind: py.JSONObject}
		t.Set("name", fn.Get("name"))
		if d := fn.Get("description"); d != nil {
			t.Set("description", d)
		}
		schema := fn.Get("parameters")
		if schema == nil || schema.Kind == py.JSONNull {
			// A function without parameters takes none; the Messages API
			// needs a schema all the same.
			schema = &py.JSONValue{Kind: py.JSONObject}
			schema.Set("type", pyStr("object"))
			schema.Set("properties", &py.JSONValue{Kind: py.JSONObject})
		}
		t.Set("input_schema", schema)
		out.Items = append(out.Items, t)
	}
	return out
}

// openAIFunction is the "function" object of an OpenAI function tool
// {"type": "function", "function": {"name": ...}}, or nil for a value of
// any other form.
func openAIFunction(v *py.JSONValue) *py.JSONValue {
	if v.Kind != py.JSONObject {
		return nil
	}
	if t := v.Get("type"); t == nil || t.Kind != py.JSONString || t.Text != "function" {
		return nil
	}
	fn := v.Get("function")
	if fn == nil || fn.Kind != py.JSONObject {
		return nil
	}
	if name := fn.Get("name"); name == nil || name.Kind != py.JSONString {
		return nil
	}
	return fn
}

// anthropicToolChoice translates an OpenAI tool_choice.
func anthropicToolChoice(v *py.JSONValue) *py.JSONValue {
	choice := &py.JSONValue{Kind: py.JSONObject}
	switch {
	case v.Kind == py.JSONString && v.Text == "auto":
		choice.Set("type", pyStr("auto"))
	case v.Kind == py.JSONString && v.Text == "required":
		choice.Set("type", pyStr("any"))
	case v.Kind == py.JSONString && v.Text == "none":
		choice.Set("type", pyStr("none"))
	case openAIFunction(v) != nil:
		choice.Set("type", pyStr("tool"))
		choice.Set("name", openAIFunction(v).Get("name"))
	default:
		return v
	}
	return choice
}
