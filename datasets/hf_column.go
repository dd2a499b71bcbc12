package datasets

import (
	"fmt"

	"github.com/stampede-bench/stampede/datasets/hfhub"
)

// columnDefaultOutputLen is the expected output of a --hf-text-column
// request without --hf-output-len (or --output-len).
const columnDefaultOutputLen = 128

// columnClass reads any hub dataset the Rust client's way when
// --hf-text-column names the column holding the prompt text: that
// column's string is the prompt, sent as it is (the Rust client applies
// no per-dataset chat template), the split "train" unless --hf-split.
// Rows whose column is missing, not a string, or empty are skipped; the
// requests are numbered in order, so oversampling's ids (which go on from
// the count) never repeat one.
var columnClass = &hfClass{name: "--hf-text-column", split: "train", sample: sampleColumn}

func sampleColumn(h *hfRun) ([]Request, error) {
	col := h.env.HFTextColumn
	out := h.outputLen(columnDefaultOutputLen)
	var reqs []Request
	found := false
	err := h.each(func(_ int, row *hfhub.Object) (bool, error) {
		if len(reqs) >= h.env.NumPrompts {
			return true, nil
		}
		v, ok := row.Get(col)
		found = found || ok
		p, isStr := v.(string)
		if !ok || !isStr || p == "" {
			return false, nil
		}
		reqs = append(reqs, Request{Prompt: p, PromptLen: h.tokens(p), ExpectedOutputLen: out, RequestID: h.id(len(reqs))})
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, valueError(fmt.Sprintf("--hf-text-column %s: no row of %s (split %s) has that column", col, h.path, h.split))
	}
	if len(reqs) == 0 {
		return nil, valueError(fmt.Sprintf("--hf-text-column %s: the column holds no non-empty text in %s (split %s)", col, h.path, h.split))
	}
	return h.oversample(reqs)
}
