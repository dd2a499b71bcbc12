package chattemplate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// RenderJSON is apply_chat_template(messages, tools=tools,
// add_generation_prompt=addGenerationPrompt, tokenize=False, **kwargs)
// with messages (a JSON list of message objects) and tools (a JSON list,
// or nil for None) given as JSON: objects keep their key order, as the
// Python dicts loaded from the same JSON do, so `tojson` renders them
// alike.
func (t *Template) RenderJSON(messages, tools []byte, addGenerationPrompt bool, kwargs map[string]any) (string, error) {
	msgs, err := orderedJSON(messages)
	if err != nil {
		return "", fmt.Errorf("chat template messages: %w", err)
	}
	list, ok := msgs.([]any)
	if !ok {
		return "", errors.New("chat template messages: want a JSON list of message objects")
	}
	var toolList any
	if tools != nil {
		if toolList, err = orderedJSON(tools); err != nil {
			return "", fmt.Errorf("chat template tools: %w", err)
		}
	}
	return t.renderWithTools(list, toolList, addGenerationPrompt, kwargs)
}

// orderedJSON decodes JSON into template values, objects as dicts in
// key order.
func orderedJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := orderedJSONValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

func orderedJSONValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			d := newDict(4)
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := orderedJSONValue(dec)
				if err != nil {
					return nil, err
				}
				d.Set(kt, v)
			}
			_, err := dec.Token()
			return d, err
		}
		out := []any{}
		for dec.More() {
			v, err := orderedJSONValue(dec)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		_, err := dec.Token()
		return out, err
	}
	return fromGo(tok), nil
}
