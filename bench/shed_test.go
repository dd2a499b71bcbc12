package bench

import (
	"testing"

	"github.com/stampede-bench/stampede/datasets"
)

// shedPrompts keeps what the merged run's phases read by index and drops
// the prompts and the audio's bytes.
func TestShedPromptsKeepsTheColumnsTheMergeReads(t *testing.T) {
	ds := &dataset{requests: []datasets.Request{{
		Prompt: "p", PromptIDs: []int32{1}, PromptList: []string{"a"}, ChatMessages: []byte("[]"),
		PromptLen: 5, ExpectedOutputLen: 7, RequestID: "id-0", TimestampSec: 1.5,
		Audio: &datasets.Audio{WAV: []byte("RIFF"), DurationSec: 2.5},
	}}}
	ds.shedPrompts()
	q := ds.requests[0]
	if q.Prompt != "" || q.PromptIDs != nil || q.PromptList != nil || q.ChatMessages != nil {
		t.Errorf("prompt kept: %+v", q)
	}
	if q.PromptLen != 5 || q.ExpectedOutputLen != 7 || q.RequestID != "id-0" || q.TimestampSec != 1.5 {
		t.Errorf("a column the merge reads changed: %+v", q)
	}
	if q.Audio == nil || q.Audio.WAV != nil || q.Audio.DurationSec != 2.5 {
		t.Errorf("audio: %+v, want its duration 2.5 without its bytes", q.Audio)
	}
}
