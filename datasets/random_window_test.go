package datasets

import (
	"reflect"
	"testing"
)

// emitted collects a stream's batches.
type emitted struct {
	reqs    []Request
	batches []int
}

func (e *emitted) emit(batch []Request) error {
	e.reqs = append(e.reqs, batch...)
	e.batches = append(e.batches, len(batch))
	return nil
}

// Built a few prompts at a time, the random datasets give the requests of
// Python's sequential loop, in as many batches as windows.
func TestRandomWindowsGiveTheSamePrompts(t *testing.T) {
	tok := newBPETokenizer()
	for _, window := range []int{1, 4, 7} {
		o := RandomOptions{Env: &Env{NumPrompts: 25, Seed: 7, RequestIDPrefix: "w-", Workers: 3},
			InputLen: 100, OutputLen: 32, RangeRatio: RangeRatio{0.5, 0.25}, PrefixLen: 20, window: window}
		var got emitted
		if err := StreamRandom(tok, o, got.emit); err != nil {
			t.Fatal(err)
		}
		if want := referenceRandom(tok, o); !reflect.DeepEqual(got.reqs, want) {
			t.Fatalf("window %d: the requests differ from the sequential reference", window)
		}
		if wantBatches := (25 + window - 1) / window; len(got.batches) != wantBatches {
			t.Errorf("window %d: %d batches, want %d", window, len(got.batches), wantBatches)
		}
	}
}

// Batched requests (--random-batch-size) keep their ids and groups across
// windows, which hold whole batches.
func TestRandomWindowsKeepBatches(t *testing.T) {
	tok := newBPETokenizer()
	o := RandomOptions{Env: &Env{NumPrompts: 23, Seed: 2, RequestIDPrefix: "b"}, InputLen: 30, OutputLen: 5, BatchSize: 3}
	whole, err := SampleRandom(tok, o)
	if err != nil {
		t.Fatal(err)
	}
	o.window = 4 // rounded down to a whole batch
	var got emitted
	if err := StreamRandom(tok, o, got.emit); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.reqs, whole) {
		t.Fatal("batched requests differ between one window and windows of one batch")
	}
	if len(got.batches) != 8 || got.reqs[7].RequestID != "b7" || len(got.reqs[7].PromptList) != 2 {
		t.Errorf("%d batches, last %+v", len(got.batches), got.reqs[len(got.reqs)-1])
	}
}

// random-mm and random-rerank built in small windows give what they give
// in one.
func TestRandomMMAndRerankWindows(t *testing.T) {
	tok := newBPETokenizer()
	mm := RandomMMOptions{
		RandomOptions: RandomOptions{Env: &Env{NumPrompts: 13, Seed: 11, Backend: chatBackend, Workers: 2},
			InputLen: 40, OutputLen: 9, RangeRatio: RangeRatio{0.3, 0.2}},
		BaseItemsPerRequest: 2, NumMMItemsRangeRatio: 0.5,
		Limits: []MMLimit{{"image", 2}}, Buckets: []MMBucket{{8, 12, 1, 0.25}, {16, 4, 1, 0.75}},
	}
	whole, err := SampleRandomMM(tok, mm)
	if err != nil {
		t.Fatal(err)
	}
	mm.window = 3
	var got emitted
	if err := StreamRandomMM(tok, mm, got.emit); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.reqs, whole) || len(got.batches) != 5 {
		t.Fatalf("random-mm: windows of 3 differ from one window (%d batches)", len(got.batches))
	}

	rr := RandomRerankOptions{RandomOptions: RandomOptions{Env: &Env{NumPrompts: 11, Seed: 1}, InputLen: 40, BatchSize: 2}}
	wholeRR, err := SampleRandomRerank(tok, rr)
	if err != nil {
		t.Fatal(err)
	}
	rr.window = 5 // 4 documents, two requests, a window
	var gotRR emitted
	if err := StreamRandomRerank(tok, rr, gotRR.emit); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotRR.reqs, wholeRR) || len(gotRR.batches) != 3 {
		t.Fatalf("random-rerank: windows of 4 documents differ from one window (%d batches)", len(gotRR.batches))
	}
}

// A window is sized by the prompts' length, in whole units.
func TestPromptWindow(t *testing.T) {
	for _, c := range []struct{ meanLen, unit, want int }{
		{8192, 1, 256}, {1 << 30, 1, minPromptWindow}, {1, 1, maxPromptWindow}, {8192, 100, 200}, {8192, 1000, 1000},
	} {
		if got := promptWindow(c.meanLen, c.unit); got != c.want {
			t.Errorf("promptWindow(%d, %d) = %d, want %d", c.meanLen, c.unit, got, c.want)
		}
	}
}
