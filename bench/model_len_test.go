package bench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/datasets"
)

func TestFitModelLen(t *testing.T) {
	reqs := []datasets.Request{
		{RequestID: "a", PromptLen: 100, ExpectedOutputLen: 28},
		{RequestID: "b", PromptLen: 100, ExpectedOutputLen: 29},
		{RequestID: "c", PromptLen: 1, ExpectedOutputLen: 1},
	}
	var stderr bytes.Buffer
	got, err := fitModelLen(append([]datasets.Request(nil), reqs...), 128, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].RequestID != "a" || got[1].RequestID != "c" {
		t.Errorf("kept %+v", got)
	}
	if !strings.Contains(stderr.String(), "dropped 1 of 3") {
		t.Errorf("stderr %q", stderr.String())
	}
	if _, err := fitModelLen(append([]datasets.Request(nil), reqs...), 1, &stderr); err == nil || !strings.Contains(err.Error(), "--max-model-len 1") {
		t.Errorf("all dropped: %v", err)
	}
}
