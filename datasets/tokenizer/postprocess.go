package tokenizer

import (
	"encoding/json"
	"fmt"
)

// postProcessor adds a model's special tokens around a single sequence
// (pairs are not needed to count or build prompts).
type postProcessor interface {
	// wrap appends ids with the special tokens around them to dst.
	wrap(dst, ids []int32) []int32
	// added is how many ids wrap adds.
	added() int
}

// templateProcessor is TemplateProcessing's "single" template: a list of
// special tokens (each possibly several ids) and the sequence "$A".
type templateProcessor struct {
	before, after []int32
}

func (p templateProcessor) wrap(dst, ids []int32) []int32 {
	dst = append(dst, p.before...)
	dst = append(dst, ids...)
	return append(dst, p.after...)
}

func (p templateProcessor) added() int { return len(p.before) + len(p.after) }

// sequenceProcessor applies processors in order.
type sequenceProcessor []postProcessor

func (seq sequenceProcessor) wrap(dst, ids []int32) []int32 {
	start := len(dst)
	dst = append(dst, ids...)
	var tmp []int32
	for _, p := range seq {
		tmp = append(tmp[:0], dst[start:]...)
		dst = p.wrap(dst[:start], tmp)
	}
	return dst
}

func (seq sequenceProcessor) added() int {
	n := 0
	for _, p := range seq {
		n += p.added()
	}
	return n
}

func parsePostProcessor(raw json.RawMessage) (postProcessor, error) {
	o, err := decodeObject(raw)
	if err != nil {
		return nil, err
	}
	switch typ := o.typeName(); typ {
	case "ByteLevel":
		return templateProcessor{}, nil
	case "TemplateProcessing":
		return parseTemplate(o)
	case "BertProcessing", "RobertaProcessing":
		var sep, cls [2]json.RawMessage
		if err := o.field("sep", &sep); err != nil {
			return nil, err
		}
		if err := o.field("cls", &cls); err != nil {
			return nil, err
		}
		var sepID, clsID int32
		if err := json.Unmarshal(sep[1], &sepID); err != nil {
			return nil, fmt.Errorf("%s sep: %w", typ, err)
		}
		if err := json.Unmarshal(cls[1], &clsID); err != nil {
			return nil, fmt.Errorf("%s cls: %w", typ, err)
		}
		return templateProcessor{before: []int32{clsID}, after: []int32{sepID}}, nil
	case "Sequence":
		list, err := parseList(o, "processors", parsePostProcessor)
		return sequenceProcessor(list), err
	default:
		return nil, fmt.Errorf("post-processor %q is not supported (supported: TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence)", typ)
	}
}

func parseTemplate(o object) (postProcessor, error) {
	var single []map[string]struct {
		ID string `json:"id"`
	}
	var special map[string]struct {
		IDs []int32 `json:"ids"`
	}
	if err := o.field("single", &single); err != nil {
		return nil, err
	}
	if err := o.field("special_tokens", &special); err != nil {
		return nil, err
	}
	var p templateProcessor
	seenSequence := false
	for _, item := range single {
		if _, ok := item["Sequence"]; ok {
			seenSequence = true
			continue
		}
		tok, ok := item["SpecialToken"]
		if !ok {
			return nil, fmt.Errorf("TemplateProcessing item %v is neither SpecialToken nor Sequence", item)
		}
		st, ok := special[tok.ID]
		if !ok {
			return nil, fmt.Errorf("TemplateProcessing special token %q is not in special_tokens", tok.ID)
		}
		if seenSequence {
			p.after = append(p.after, st.IDs...)
		} else {
			p.before = append(p.before, st.IDs...)
		}
	}
	return p, nil
}
