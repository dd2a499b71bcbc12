package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/stampede-bench/stampede/datasets/hfhub"
	"github.com/stampede-bench/stampede/datasets/pyrand"
	"github.com/stampede-bench/stampede/internal/py"
)

// bfclClass is BFCLDataset (Berkeley Function Calling Leaderboard): one
// JSON-lines file per --bfcl-categories entry (BFCL_v3_<category>.json
// at the repository's root), rows interleaved round-robin across the
// categories, shuffled with a private random.Random(seed) unless
// --disable-shuffle. Each row's first turn is sent as the chat messages
// with its functions as OpenAI tools (BFCL's "dict", "float", "tuple" and
// "any" types renamed to JSON Schema's) and tool_choice "auto"; the
// prompt length is the chat template rendered with the tools.
var bfclClass = &hfClass{name: "BFCLDataset", paths: []string{"gorilla-llm/Berkeley-Function-Calling-Leaderboard"},
	split: "train", clearSubset: true, noLoad: true, sample: sampleBFCL}

var bfclDefaultCategories = []string{"simple", "live_simple", "multiple"}

// bfclTypeRemap maps BFCL's type names to JSON Schema's.
var bfclTypeRemap = map[string]string{"dict": "object", "float": "number", "tuple": "array", "any": "string"}

func sampleBFCL(h *hfRun) ([]Request, error) {
	out := h.outputLen(512)
	var cats []string
	for _, c := range h.env.Flags.BFCLCategories {
		if c = strings.TrimSpace(c); c != "" {
			cats = append(cats, c)
		}
	}
	if len(cats) == 0 {
		cats = bfclDefaultCategories
	}
	perCat := make([][]*hfhub.Object, len(cats))
	longest := 0
	for i, c := range cats {
		rows, err := h.bfclCategory(c)
		if err != nil {
			return nil, err
		}
		perCat[i] = rows
		longest = max(longest, len(rows))
	}
	var interleaved []*hfhub.Object
	for i := range longest {
		for _, rows := range perCat {
			if i < len(rows) {
				interleaved = append(interleaved, rows[i])
			}
		}
	}
	if !h.env.DisableShuffle {
		pyrand.NewRandom(h.env.Seed).Shuffle(len(interleaved), func(i, j int) {
			interleaved[i], interleaved[j] = interleaved[j], interleaved[i]
		})
	}
	var reqs []Request
	for _, row := range interleaved {
		if len(reqs) >= h.env.NumPrompts {
			break
		}
		question, _ := row.Get("question")
		functions, _ := row.Get("function")
		if !pyTruthy(question) || !pyTruthy(functions) {
			continue
		}
		turns, ok := question.([]any)
		if !ok {
			continue
		}
		messages, ok := turns[0].([]any)
		if !ok || len(messages) == 0 {
			continue
		}
		fnList, ok := functions.([]any)
		if !ok {
			fnList = []any{functions}
		}
		tools := make([]any, len(fnList))
		for i, fn := range fnList {
			tools[i] = &hfhub.Object{Keys: []string{"type", "function"},
				Fields: map[string]any{"type": "function", "function": bfclTranslate(fn)}}
		}
		msgJSON, err := json.Marshal(messages)
		if err != nil {
			return nil, fmt.Errorf("dataset hf (BFCLDataset): %w", err)
		}
		toolsJSON, err := json.Marshal(tools)
		if err != nil {
			return nil, fmt.Errorf("dataset hf (BFCLDataset): %w", err)
		}
		promptLen, err := h.bfclPromptLen(msgJSON, toolsJSON, messages)
		if err != nil {
			return nil, err
		}
		overrides, _ := json.Marshal(&hfhub.Object{Keys: []string{"tools", "tool_choice"},
			Fields: map[string]any{"tools": json.RawMessage(toolsJSON), "tool_choice": "auto"}})
		reqs = append(reqs, Request{ChatMessages: msgJSON, PromptLen: promptLen, ExpectedOutputLen: out,
			RequestID: h.id(len(reqs)), Overrides: overrides})
	}
	return h.oversample(reqs)
}

// bfclPromptLen is the token count of the messages rendered with the
// tools; when the template fails (or there is none), of the contents
// joined by newlines, with a warning, as vLLM falls back.
func (h *hfRun) bfclPromptLen(msgJSON, toolsJSON []byte, messages []any) (int, error) {
	var err error
	if h.env.ChatRender != nil {
		var rendered string
		if rendered, err = h.env.ChatRender(msgJSON, toolsJSON); err == nil {
			return h.tokens(rendered), nil
		}
	} else {
		err = errors.New("the tokenizer has no chat template")
	}
	if h.env.Logf != nil {
		h.env.Logf("WARNING: BFCL: apply_chat_template failed for a sample, falling back to plain-text prompt length: %v", err)
	}
	texts := make([]string, 0, len(messages))
	for _, m := range messages {
		o, _ := m.(*hfhub.Object)
		if o == nil {
			return 0, &py.Error{Type: "AttributeError", Msg: fmt.Sprintf("'%s' object has no attribute 'get' (a BFCL message)", pyTypeName(m))}
		}
		c, ok := o.Get("content")
		if !ok {
			c = ""
		}
		s, isStr := c.(string)
		if !isStr {
			return 0, &py.Error{Type: "TypeError", Msg: fmt.Sprintf("sequence item: expected str instance, %s found", pyTypeName(c))}
		}
		texts = append(texts, s)
	}
	return h.tokens(strings.Join(texts, "\n")), nil
}

// bfclTranslate renames BFCL type names throughout a function schema,
// keeping every object's key order.
func bfclTranslate(v any) any {
	switch v := v.(type) {
	case *hfhub.Object:
		o := &hfhub.Object{Keys: append([]string(nil), v.Keys...), Fields: make(map[string]any, len(v.Fields))}
		for _, k := range v.Keys {
			o.Fields[k] = bfclTranslate(v.Fields[k])
		}
		if t, ok := o.Fields["type"].(string); ok {
			if n, ok := bfclTypeRemap[t]; ok {
				o.Fields["type"] = n
			}
		}
		return o
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = bfclTranslate(e)
		}
		return out
	}
	return v
}

// pyTruthy is Python's truth value of a row value.
func pyTruthy(v any) bool {
	if o, ok := v.(*hfhub.Object); ok {
		return len(o.Keys) > 0
	}
	return py.Truthy(v)
}

// bfclCategory reads BFCL_v3_<category>.json from a local directory or
// the hub (cache, else download).
func (h *hfRun) bfclCategory(category string) ([]*hfhub.Object, error) {
	file := "BFCL_v3_" + category + ".json"
	notFound := valueError(fmt.Sprintf("BFCL category '%s' not found: file '%s' does not exist in %s. Check --bfcl-categories (defaults: %s).",
		category, file, h.path, strings.Join(bfclDefaultCategories, ", ")))
	var path string
	if info, err := os.Stat(h.path); err == nil && info.IsDir() {
		path = filepath.Join(h.path, file)
		if _, err := os.Stat(path); err != nil {
			return nil, notFound
		}
	} else {
		p, err := hfhub.FetchFile(h.path, file, h.hub)
		if errors.Is(err, hfhub.ErrNotFound) {
			return nil, notFound
		}
		if err != nil {
			return nil, fmt.Errorf("dataset hf (BFCLDataset): %w", err)
		}
		path = p
	}
	rows, err := hfhub.Open([]string{path}, hfhub.Order{})
	if err != nil {
		return nil, fmt.Errorf("dataset hf (BFCLDataset): %w", err)
	}
	defer rows.Close()
	var out []*hfhub.Object
	for {
		o, err := rows.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("dataset hf (BFCLDataset): %w", err)
		}
		out = append(out, o)
	}
}
