package datasets

import (
	"bytes"
	"strings"
	"testing"
)

func TestFitModelLen(t *testing.T) {
	reqs := []Request{
		{RequestID: "a", PromptLen: 100, ExpectedOutputLen: 28},
		{RequestID: "b", PromptLen: 100, ExpectedOutputLen: 29},
		{RequestID: "c", PromptLen: 1, ExpectedOutputLen: 1},
	}
	var stderr bytes.Buffer
	got, err := FitModelLen(append([]Request(nil), reqs...), 128, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].RequestID != "a" || got[1].RequestID != "c" {
		t.Errorf("kept %+v", got)
	}
	if !strings.Contains(stderr.String(), "dropped 1 of 3") {
		t.Errorf("stderr %q", stderr.String())
	}
	if _, err := FitModelLen(append([]Request(nil), reqs...), 1, &stderr); err == nil || !strings.Contains(err.Error(), "--max-model-len 1") {
		t.Errorf("all dropped: %v", err)
	}
}

// byteTokenizer is one token per byte, with a BOS of 1.
type byteTokenizer struct{}

func (byteTokenizer) Encode(dst []int32, text string, addSpecial bool) []int32 {
	if addSpecial {
		dst = append(dst, 1)
	}
	for i := range len(text) {
		dst = append(dst, int32(text[i]))
	}
	return dst
}
func (byteTokenizer) Decode([]int32, bool) string { return "" }
func (byteTokenizer) VocabSize() int              { return 256 }
func (byteTokenizer) NumSpecialTokensToAdd() int  { return 1 }
func (byteTokenizer) AllSpecialIDs() []int32      { return []int32{1} }

func TestPromptTokenIDs(t *testing.T) {
	reqs := make([]Request, 9)
	for i := range reqs {
		reqs[i] = Request{Prompt: strings.Repeat("a", i+1), PromptLen: i + 1}
	}
	PromptTokenIDs(reqs, byteTokenizer{})
	for i, r := range reqs {
		if r.Prompt != "" || len(r.PromptIDs) != i+2 || r.PromptIDs[0] != 1 || r.PromptIDs[i+1] != 'a' || r.PromptLen != i+1 {
			t.Errorf("request %d: %+v", i, r)
		}
	}
}
