package datasets

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/stampede-bench/stampede/datasets/hfhub"
	"github.com/stampede-bench/stampede/internal/py"
)

// The text-only hf datasets: one prompt column (sometimes templated), a
// fixed or recorded output length.

// singleTurn builds the classes that take one text column, template it
// unless --skip-chat-template, and ask for a fixed output length
// (MTBenchDataset, HumanEvalDataset, GSM8KDataset).
func singleTurn(name, path, split, subset string, defaultOut int, prompt func(row *hfhub.Object) (string, error)) *hfClass {
	return &hfClass{name: name, paths: []string{path}, split: split, subset: subset,
		sample: func(h *hfRun) ([]Request, error) {
			return h.sampleText(h.outputLen(defaultOut), func(row *hfhub.Object) (string, bool, error) {
				p, err := prompt(row)
				return p, true, err
			})
		}}
}

var mtBenchClass = singleTurn("MTBenchDataset", "philschmid/mt-bench", "train", "", 256, func(row *hfhub.Object) (string, error) {
	turns, err := field(row, "turns")
	if err != nil {
		return "", err
	}
	list, ok := turns.([]any)
	if !ok || len(list) == 0 {
		return "", &py.Error{Type: "IndexError", Msg: "list index out of range (column \"turns\" has no first turn)"}
	}
	s, ok := list[0].(string)
	if !ok {
		return "", &py.Error{Type: "TypeError", Msg: fmt.Sprintf("turns[0] holds %s, want a str", pyTypeName(list[0]))}
	}
	return s, nil
})

var humanEvalClass = singleTurn("HumanEvalDataset", "openai/openai_humaneval", "test", "", 256, func(row *hfhub.Object) (string, error) {
	return strField(row, "prompt")
})

var gsm8kClass = singleTurn("GSM8KDataset", "openai/gsm8k", "test", "main", 256, func(row *hfhub.Object) (string, error) {
	return strField(row, "question")
})

// instructCoderClass is InstructCoderDataset: the first num_prompts rows
// (take(n)), prompt "{input}\n\n{instruction} Just output the code, do
// not include any explanation.", templated unless --skip-chat-template.
var instructCoderClass = &hfClass{name: "InstructCoderDataset", paths: []string{"likaixin/InstructCoder"}, split: "train",
	sample: func(h *hfRun) ([]Request, error) {
		return h.sampleText(h.outputLen(200), func(row *hfhub.Object) (string, bool, error) {
			f := rowFields{row: row}
			in, instr := f.get("input"), f.get("instruction")
			if f.err != nil {
				return "", false, f.err
			}
			return pyStr(in) + "\n\n" + pyStr(instr) + " Just output the code, do not include any explanation.", true, nil
		})
	}}

// blazeditClass is BlazeditDataset: rows whose norm_distance lies in
// [--blazedit-min-distance, --blazedit-max-distance], Blazedit's edit
// prompt, templated unless --skip-chat-template. Ids are row positions,
// skipped rows included, as in vLLM.
var blazeditClass = &hfClass{name: "BlazeditDataset", paths: []string{"vdaita/edit_5k_char", "vdaita/edit_10k_char"}, pathOnly: true, split: "train",
	sample: func(h *hfRun) ([]Request, error) {
		lo, hi := h.env.Flags.BlazeditMinDistance, h.env.Flags.BlazeditMaxDistance
		return h.sampleText(h.outputLen(4000), func(row *hfhub.Object) (string, bool, error) {
			f := rowFields{row: row}
			code, change, dv := f.get("code"), f.get("change_request"), f.get("norm_distance")
			if f.err != nil {
				return "", false, f.err
			}
			d, ok := number(dv)
			if !ok {
				return "", false, &py.Error{Type: "TypeError", Msg: fmt.Sprintf("'<' not supported between instances of '%s' and 'float' (column \"norm_distance\")", pyTypeName(dv))}
			}
			if d < lo || d > hi {
				return "", false, nil
			}
			return "Given a code file, please apply the change requests and generate the new file.\n\nOriginal file:\n```python\n" +
				pyStr(code) + "\n```\n\nChange request:\n" + pyStr(change) +
				"\n\nPlease generate the new code file in the \"New file\" section below.", true, nil
		})
	}}

func number(v any) (float64, bool) {
	switch v := v.(type) {
	case int64:
		return float64(v), true
	case float64:
		return v, true
	case bool:
		if v {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// recordedPair is the loop of the conversation and AIMO classes: prompt
// and completion texts, the completion's token count as the output
// length unless --hf-output-len, and the validity rule only then.
func (h *hfRun) recordedPair(prompt, completion string, maxPrompt, maxTotal int) (promptLen, outLen int, keep bool, err error) {
	promptLen = h.tokens(prompt)
	completionLen := h.tokens(completion)
	dynamic := h.env.Flags.HFOutputLen == nil
	outLen = completionLen
	if !dynamic {
		outLen = *h.env.Flags.HFOutputLen
	}
	if outLen <= 0 {
		return 0, 0, false, &py.Error{Type: "AssertionError", Msg: fmt.Sprintf("output length must be a positive int, got %d", outLen)}
	}
	if dynamic && !validSequence(promptLen, completionLen, maxPrompt, maxTotal) {
		return 0, 0, false, nil
	}
	return promptLen, outLen, true, nil
}

// validSequence is is_valid_sequence with min_len 4.
func validSequence(promptLen, outputLen, maxPrompt, maxTotal int) bool {
	return promptLen >= 4 && outputLen >= 4 && promptLen <= maxPrompt && promptLen+outputLen <= maxTotal
}

// conversationTurns returns conversations[0]["value"] and [1]["value"],
// and whether the row has at least two turns (the classes' filter).
func conversationTurns(row *hfhub.Object) (prompt, completion string, ok bool, err error) {
	v, err := field(row, "conversations")
	if err != nil {
		return "", "", false, err
	}
	conv, isList := v.([]any)
	if !isList {
		return "", "", false, &py.Error{Type: "TypeError", Msg: fmt.Sprintf("column \"conversations\" holds %s, want a list of turns", pyTypeName(v))}
	}
	if len(conv) < 2 {
		return "", "", false, nil
	}
	var texts [2]string
	for i := range texts {
		turn, _ := conv[i].(*hfhub.Object)
		if turn == nil {
			return "", "", false, &py.Error{Type: "TypeError", Msg: fmt.Sprintf("conversations[%d] holds %s, want a dict with \"value\"", i, pyTypeName(conv[i]))}
		}
		if texts[i], err = strField(turn, "value"); err != nil {
			return "", "", false, err
		}
	}
	return texts[0], texts[1], true, nil
}

// conversationClass is ConversationDataset (and, with images,
// MultiModalConversationDataset): rows with two or more turns.
func conversationSample(h *hfRun) ([]Request, error) {
	var reqs []Request
	err := h.each(func(_ int, row *hfhub.Object) (bool, error) {
		if len(reqs) >= h.env.NumPrompts {
			return true, nil
		}
		prompt, completion, ok, err := conversationTurns(row)
		if err != nil || !ok {
			return err != nil, err
		}
		promptLen, outLen, keep, err := h.recordedPair(prompt, completion, 1024, 2048)
		if err != nil || !keep {
			return err != nil, err
		}
		var media json.RawMessage
		if img, has := row.Get("image"); has {
			if media, err = h.processImage(img); err != nil {
				return true, err
			}
		}
		r := Request{Prompt: prompt, PromptLen: promptLen, ExpectedOutputLen: outLen, RequestID: h.id(len(reqs))}
		h.attachMedia(&r, media)
		reqs = append(reqs, r)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return h.oversample(reqs)
}

// attachMedia is the classes' tail: with --enable-multimodal-chat the
// prompt becomes the chat message holding the text and media, else the
// media travel beside the prompt.
func (h *hfRun) attachMedia(r *Request, media json.RawMessage) {
	if h.env.EnableMultimodalChat {
		r.ChatMessages = userChatMessages(r.Prompt, media)
		r.Prompt = ""
		return
	}
	if media != nil {
		r.MultiModal = []json.RawMessage{media}
	}
}

var conversationClass = &hfClass{name: "ConversationDataset", paths: []string{"Aeala/ShareGPT_Vicuna_unfiltered"}, sample: conversationSample}

var multiModalConversationClass = &hfClass{name: "MultiModalConversationDataset", paths: []string{"lmms-lab/LLaVA-OneVision-Data"}, multimodal: true, sample: conversationSample}

// aimoClass is AIMODataset: problem and solution, the validity rule with
// prompts up to 2,048 tokens and 32,000 in all.
var aimoClass = &hfClass{name: "AIMODataset", paths: []string{"AI-MO/aimo-validation-aime", "AI-MO/NuminaMath-1.5", "AI-MO/NuminaMath-CoT"}, split: "train",
	sample: func(h *hfRun) ([]Request, error) {
		var reqs []Request
		err := h.each(func(_ int, row *hfhub.Object) (bool, error) {
			if len(reqs) >= h.env.NumPrompts {
				return true, nil
			}
			f := rowFields{row: row}
			prompt, completion := f.str("problem"), f.str("solution")
			if f.err != nil {
				return true, f.err
			}
			promptLen, outLen, keep, err := h.recordedPair(prompt, completion, 2048, 32000)
			if err != nil || !keep {
				return err != nil, err
			}
			reqs = append(reqs, Request{Prompt: prompt, PromptLen: promptLen, ExpectedOutputLen: outLen, RequestID: h.id(len(reqs))})
			return false, nil
		})
		if err != nil {
			return nil, err
		}
		return h.oversample(reqs)
	}}

// zetaPrompt is Zed's next-edit instruction, with {events} and {input}.
const zetaPrompt = "### Instruction:\nYou are a code completion assistant and your task is to analyze user edits and then rewrite an excerpt that the user provides, suggesting the appropriate edits within the excerpt, taking into account the cursor location.\n\n### User Edits:\n\n%s\n\n### User Excerpt:\n\n%s\n\n### Response:\n\n"

// nextEditClass is NextEditPredictionDataset (zeta): the prompt from the
// row's events and input; the output length is the token count of the
// answer from the editable region's start marker on (--hf-output-len
// does not apply, as in vLLM).
var nextEditClass = &hfClass{name: "NextEditPredictionDataset", paths: []string{"zed-industries/zeta"}, split: "train",
	sample: func(h *hfRun) ([]Request, error) {
		if h.name != "zed-industries/zeta" {
			return nil, valueError("Unsupported dataset path: " + h.name)
		}
		var reqs []Request
		err := h.each(func(i int, row *hfhub.Object) (bool, error) {
			f := rowFields{row: row}
			events, input, output := f.get("events"), f.get("input"), f.str("output")
			if f.err != nil {
				return true, f.err
			}
			prompt := fmt.Sprintf(zetaPrompt, pyStr(events), pyStr(input))
			// str.find returns -1 when the marker is missing, and
			// output[-1:] is then the last character.
			start := strings.Index(output, "<|editable_region_start|>")
			expected := output
			if start < 0 {
				expected = lastRune(output)
			} else {
				expected = output[start:]
			}
			reqs = append(reqs, Request{Prompt: prompt, PromptLen: h.tokens(prompt), ExpectedOutputLen: h.tokens(expected), RequestID: h.id(i)})
			return len(reqs) >= h.env.NumPrompts, nil
		})
		if err != nil {
			return nil, err
		}
		return h.oversample(reqs)
	}}

func lastRune(s string) string {
	r := []rune(s)
	if len(r) == 0 {
		return ""
	}
	return string(r[len(r)-1:])
}

// mlperfClass is MLPerfDataset: system prompt and question through the
// chat template; the output length is the reference answer's token count
// (no special tokens) unless --hf-output-len; the validity rule applies
// either way.
var mlperfClass = &hfClass{name: "MLPerfDataset", paths: []string{"mgoin/mlperf-inference-llama2-data", "mgoin/mlperf-inference-llama3.1-data"}, split: "train",
	sample: func(h *hfRun) ([]Request, error) {
		if h.env.ChatRender == nil {
			return nil, fmt.Errorf("dataset hf (MLPerfDataset): the tokenizer has no chat template (no chat_template in tokenizer_config.json or chat_template.jinja beside it), and vLLM renders every MLPerf prompt with it")
		}
		var reqs []Request
		err := h.each(func(_ int, row *hfhub.Object) (bool, error) {
			if len(reqs) >= h.env.NumPrompts {
				return true, nil
			}
			f := rowFields{row: row}
			system, question, output := f.get("system_prompt"), f.get("question"), f.get("output")
			if f.err != nil {
				return true, f.err
			}
			answer, ok := output.(string)
			if !ok {
				return true, &py.Error{Type: "TypeError", Msg: fmt.Sprintf("column \"output\" holds %s, want a str", pyTypeName(output))}
			}
			msgs, _ := json.Marshal([]any{
				orderedMsg{"system", system},
				orderedMsg{"user", question},
			})
			prompt, err := h.env.ChatRender(msgs, nil)
			if err != nil {
				return true, fmt.Errorf("dataset hf (MLPerfDataset): chat template: %w", err)
			}
			promptLen := h.tokens(prompt)
			out := len(h.env.Tokenizer.Encode(nil, answer, false))
			if p := h.env.Flags.HFOutputLen; p != nil {
				out = *p
			}
			if !validSequence(promptLen, out, 1024, 2048) {
				return false, nil
			}
			reqs = append(reqs, Request{Prompt: prompt, PromptLen: promptLen, ExpectedOutputLen: out, RequestID: h.id(len(reqs))})
			return false, nil
		})
		if err != nil {
			return nil, err
		}
		return h.oversample(reqs)
	}}

// orderedMsg marshals as {"role": ..., "content": ...} in that order.
type orderedMsg struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}
