package mock

import (
	"fmt"
	"math"

	"github.com/valyala/fastjson"
)

// apiError is an error answered with vLLM's error JSON.
type apiError struct {
	status int
	typ    string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func invalid(format string, args ...any) *apiError {
	return &apiError{status: 400, typ: "BadRequestError", msg: fmt.Sprintf(format, args...)}
}

// genParams is what a completions or chat request asks for, as the timing
// model and the encoders need it.
type genParams struct {
	chat         bool
	streaming    bool
	includeUsage bool
	// continuousUsage: stream_options.continuous_usage_stats.
	continuousUsage bool
	// promptTokens holds one count per prompt of a batched completions
	// request (one entry otherwise).
	promptTokens []int
	maxTokens    int
	minTokens    int
	ignoreEOS    bool
}

// parseGeneration decodes a /v1/completions or /v1/chat/completions body.
// ids is scratch space for token ids.
func (s *Server) parseGeneration(p *fastjson.Parser, body []byte, chat bool, ids *[]int32, g *genParams) *apiError {
	*g = genParams{chat: chat, promptTokens: g.promptTokens[:0]}
	v, aerr := s.parseBody(p, body)
	if aerr != nil {
		return aerr
	}
	if aerr := s.checkModel(v); aerr != nil {
		return aerr
	}
	if chat {
		n, aerr := s.countMessages(v.Get("messages"), "messages", ids)
		if aerr != nil {
			return aerr
		}
		g.promptTokens = append(g.promptTokens, n)
	} else {
		var aerr *apiError
		if g.promptTokens, aerr = s.countPrompts(v.Get("prompt"), "prompt", true, ids, g.promptTokens); aerr != nil {
			return aerr
		}
	}

	var err error
	if g.streaming, err = optBool(v, "stream"); err != nil {
		return invalid("stream: %v", err)
	}
	if so := v.Get("stream_options"); so != nil && so.Type() != fastjson.TypeNull {
		if !g.streaming {
			return invalid("Stream options can only be defined when `stream=True`.")
		}
		if so.Type() != fastjson.TypeObject {
			return invalid("stream_options: want an object")
		}
		if g.includeUsage, err = optBool(so, "include_usage"); err != nil {
			return invalid("stream_options.include_usage: %v", err)
		}
		if g.continuousUsage, err = optBool(so, "continuous_usage_stats"); err != nil {
			return invalid("stream_options.continuous_usage_stats: %v", err)
		}
	}
	if g.ignoreEOS, err = optBool(v, "ignore_eos"); err != nil {
		return invalid("ignore_eos: %v", err)
	}
	if g.minTokens, err = optInt(v, "min_tokens", 0); err != nil {
		return invalid("min_tokens: %v", err)
	}
	if g.minTokens < 0 {
		return invalid("min_tokens must be greater than or equal to 0, got %d.", g.minTokens)
	}
	maxKey := "max_tokens"
	if chat && v.Exists("max_completion_tokens") && v.Get("max_completion_tokens").Type() != fastjson.TypeNull {
		maxKey = "max_completion_tokens"
	}
	if g.maxTokens, err = optInt(v, maxKey, -1); err != nil {
		return invalid("%s: %v", maxKey, err)
	}
	longest := 0
	for _, n := range g.promptTokens {
		longest = max(longest, n)
	}
	if longest >= s.cfg.MaxModelLen {
		return invalid("This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.", s.cfg.MaxModelLen, longest)
	}
	switch {
	case g.maxTokens == -1 && s.cfg.DefaultMaxTokens > 0:
		g.maxTokens = min(s.cfg.DefaultMaxTokens, s.cfg.MaxModelLen-longest)
	case g.maxTokens == -1:
		g.maxTokens = s.cfg.MaxModelLen - longest
	case g.maxTokens < 1:
		return invalid("%s must be at least 1, got %d.", maxKey, g.maxTokens)
	case longest+g.maxTokens > s.cfg.MaxModelLen:
		return invalid("'max_tokens' or 'max_completion_tokens' is too large: %d. This model's maximum context length is %d tokens and your request has %d input tokens (%d > %d - %d).",
			g.maxTokens, s.cfg.MaxModelLen, longest, g.maxTokens, s.cfg.MaxModelLen, longest)
	}
	if g.minTokens > g.maxTokens {
		return invalid("min_tokens must be less than or equal to max_tokens=%d, got %d.", g.maxTokens, g.minTokens)
	}
	return nil
}

func (s *Server) parseBody(p *fastjson.Parser, body []byte) (*fastjson.Value, *apiError) {
	if len(body) == 0 {
		return nil, invalid("request body is empty; want a JSON object")
	}
	v, err := p.ParseBytes(body)
	if err != nil {
		return nil, invalid("malformed JSON body: %v", err)
	}
	if v.Type() != fastjson.TypeObject {
		return nil, invalid("request body is a JSON %s; want an object", v.Type())
	}
	return v, nil
}

// checkModel answers a request for another model as vLLM does.
func (s *Server) checkModel(v *fastjson.Value) *apiError {
	m := v.Get("model")
	if m == nil || m.Type() == fastjson.TypeNull {
		return nil
	}
	name, err := m.StringBytes()
	if err != nil {
		return invalid("model: want a string")
	}
	if string(name) != s.cfg.Model {
		return &apiError{status: 404, typ: "NotFoundError", msg: fmt.Sprintf("The model `%s` does not exist.", name)}
	}
	return nil
}

// countPrompts counts the tokens of an OpenAI prompt or input field: a
// string, a list of strings, a list of token ids, or a list of such lists.
// It appends one count per prompt to counts.
func (s *Server) countPrompts(v *fastjson.Value, field string, addSpecial bool, ids *[]int32, counts []int) ([]int, *apiError) {
	if v == nil {
		return counts, invalid("%s: field required", field)
	}
	switch v.Type() {
	case fastjson.TypeString:
		sb, _ := v.StringBytes()
		*ids = s.cfg.Tokenizer.Encode((*ids)[:0], string(sb), addSpecial)
		return append(counts, len(*ids)), nil
	case fastjson.TypeArray:
		items, _ := v.Array()
		if len(items) == 0 {
			return counts, invalid("%s: must not be empty", field)
		}
		switch items[0].Type() {
		case fastjson.TypeNumber:
			if aerr := checkTokenIDs(items, field); aerr != nil {
				return counts, aerr
			}
			return append(counts, len(items)), nil
		case fastjson.TypeString:
			for i, it := range items {
				sb, err := it.StringBytes()
				if err != nil {
					return counts, invalid("%s[%d]: want a string like %s[0]", field, i, field)
				}
				*ids = s.cfg.Tokenizer.Encode((*ids)[:0], string(sb), addSpecial)
				counts = append(counts, len(*ids))
			}
			return counts, nil
		case fastjson.TypeArray:
			for i, it := range items {
				inner, err := it.Array()
				if err != nil || len(inner) == 0 {
					return counts, invalid("%s[%d]: want a non-empty list of token ids", field, i)
				}
				if aerr := checkTokenIDs(inner, field); aerr != nil {
					return counts, aerr
				}
				counts = append(counts, len(inner))
			}
			return counts, nil
		}
	}
	return counts, invalid("%s: want a string, a list of strings, or a list of token ids", field)
}

func checkTokenIDs(items []*fastjson.Value, field string) *apiError {
	for i, it := range items {
		id, err := it.Int()
		if err != nil || id < 0 || id > math.MaxInt32 {
			return invalid("%s[%d]: want a token id (a non-negative integer)", field, i)
		}
	}
	return nil
}

// countMessages counts the tokens of a chat "messages" list: the text of
// every message's content (a string, or the "text" of its text parts),
// without a chat template, since the mock has none.
func (s *Server) countMessages(v *fastjson.Value, field string, ids *[]int32) (int, *apiError) {
	if v == nil {
		return 0, invalid("%s: field required", field)
	}
	msgs, err := v.Array()
	if err != nil || len(msgs) == 0 {
		return 0, invalid("%s: want a non-empty list of messages", field)
	}
	total := 0
	for i, m := range msgs {
		if m.Type() != fastjson.TypeObject {
			return 0, invalid("%s[%d]: want an object with role and content", field, i)
		}
		if _, err := stringField(m, "role"); err != nil {
			return 0, invalid("%s[%d].role: want a string", field, i)
		}
		c := m.Get("content")
		if c == nil {
			continue
		}
		switch c.Type() {
		case fastjson.TypeNull:
		case fastjson.TypeString:
			sb, _ := c.StringBytes()
			*ids = s.cfg.Tokenizer.Encode((*ids)[:0], string(sb), false)
			total += len(*ids)
		case fastjson.TypeArray:
			parts, _ := c.Array()
			for j, part := range parts {
				if part.Type() != fastjson.TypeObject {
					return 0, invalid("%s[%d].content[%d]: want a content part object", field, i, j)
				}
				if text := part.GetStringBytes("text"); text != nil {
					*ids = s.cfg.Tokenizer.Encode((*ids)[:0], string(text), false)
					total += len(*ids)
				}
			}
		default:
			return 0, invalid("%s[%d].content: want a string or a list of content parts", field, i)
		}
	}
	return total, nil
}

func optBool(v *fastjson.Value, key string) (bool, error) {
	f := v.Get(key)
	if f == nil || f.Type() == fastjson.TypeNull {
		return false, nil
	}
	b, err := f.Bool()
	if err != nil {
		return false, fmt.Errorf("want true or false")
	}
	return b, nil
}

func optInt(v *fastjson.Value, key string, def int) (int, error) {
	f := v.Get(key)
	if f == nil || f.Type() == fastjson.TypeNull {
		return def, nil
	}
	n, err := f.Int()
	if err != nil {
		return 0, fmt.Errorf("want an integer")
	}
	return n, nil
}

// stringField returns the string at v[key]; absent, null or non-string
// values are an error. fastjson's accessors panic on a nil *Value, so every
// lookup whose presence is not known goes through these two.
func stringField(v *fastjson.Value, key string) ([]byte, error) {
	f := v.Get(key)
	if f == nil {
		return nil, fmt.Errorf("%s: field required", key)
	}
	return f.StringBytes()
}

// arrayField returns the array at v[key], or an error.
func arrayField(v *fastjson.Value, key string) ([]*fastjson.Value, error) {
	f := v.Get(key)
	if f == nil {
		return nil, fmt.Errorf("%s: field required", key)
	}
	return f.Array()
}
