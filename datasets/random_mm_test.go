package datasets

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/jpeg"
	"reflect"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/datasets/pyrand"
)

// referenceImageBytes is numpy's uint8 fill written out plainly: one
// 32-bit draw per four bytes, lowest byte first.
func referenceImageBytes(rng *pyrand.Generator, n int) []byte {
	out := make([]byte, 0, n)
	for len(out) < n {
		v, _ := rng.Integers(0, 1<<32, 1)
		for s := 0; s < 32 && len(out) < n; s += 8 {
			out = append(out, byte(v[0]>>s))
		}
	}
	return out
}

func TestRandomImageTakesNumpysDraws(t *testing.T) {
	for _, size := range [][2]int{{1, 1}, {3, 5}, {7, 2}, {64, 49}} { // 3, 45, 42, 9408 bytes
		w, h := size[0], size[1]
		got := randomImage(pyrand.NewGenerator(5), w, h)
		ref := pyrand.NewGenerator(5)
		want := referenceImageBytes(ref, 3*w*h)
		for k, b := range want {
			if p := got.Pix[k/3*4+k%3]; p != b {
				t.Fatalf("%dx%d: byte %d = %d, want %d", w, h, k, p, b)
			}
		}
		for i := 3; i < len(got.Pix); i += 4 {
			if got.Pix[i] != 0xff {
				t.Fatalf("%dx%d: alpha %d at %d", w, h, got.Pix[i], i)
			}
		}
		// Both generators must now be at the same place.
		g := pyrand.NewGenerator(5)
		randomImage(g, w, h)
		if g.Uint64() != ref.Uint64() {
			t.Errorf("%dx%d: the image took a different number of draws", w, h)
		}
	}
}

type mmReference struct {
	reqs  []Request
	sizes [][][2]int // per request, per item: width, height
}

// referenceRandomMM is RandomMultiModalDataset.sample for images written
// out sequentially from one generator: the text as referenceRandom builds
// it, and after each request's text its item count, then per item a
// choice draw and the pixels.
func referenceRandomMM(tok Tokenizer, o RandomMMOptions, minItems, maxItems int, buckets []MMBucket) mmReference {
	rng := pyrand.NewGenerator(uint64(o.Seed))
	in, out, off := referenceSampling(tok, rng, o.NumPrompts, o.InputLen, o.OutputLen, o.RangeRatio)
	allowed := allowedTokens(tok.VocabSize(), tok.AllSpecialIDs())
	var ref mmReference
	for i := range o.NumPrompts {
		seq := referenceSequence(nil, allowed, int(in[i]), off[i], i)
		prompt, ids, _ := referenceFix(tok, seq, int(in[i]), rng)
		ref.reqs = append(ref.reqs, Request{Prompt: prompt, PromptLen: len(ids), ExpectedOutputLen: int(out[i]), RequestID: o.RequestIDPrefix + itoa(i)})
		count, _ := rng.Integers(int64(minItems), int64(maxItems)+1, 1)
		var sizes [][2]int
		for range count[0] {
			u := rng.Random()
			cum, pick := 0.0, buckets[len(buckets)-1]
			for _, b := range buckets {
				if cum += b.Probability; cum > u {
					pick = b
					break
				}
			}
			referenceImageBytes(rng, 3*pick.Width*pick.Height*pick.Frames)
			sizes = append(sizes, [2]int{pick.Width, pick.Height})
		}
		ref.sizes = append(ref.sizes, sizes)
	}
	return ref
}

func imageSize(t *testing.T, part json.RawMessage) [2]int {
	t.Helper()
	var p struct {
		Type     string `json:"type"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(part, &p); err != nil {
		t.Fatalf("part %.80s: %v", part, err)
	}
	data, ok := strings.CutPrefix(p.ImageURL.URL, "data:image/jpeg;base64,")
	if p.Type != "image_url" || !ok {
		t.Fatalf("part %.80s is not a JPEG image_url", part)
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return [2]int{cfg.Width, cfg.Height}
}

func TestSampleRandomMMMatchesSequentialReference(t *testing.T) {
	tok := newBPETokenizer()
	buckets := []MMBucket{{8, 12, 1, 1}, {16, 4, 1, 3}, {32, 32, 4, 0}}
	o := RandomMMOptions{
		RandomOptions: RandomOptions{
			Env:      &Env{NumPrompts: 30, Seed: 11, Backend: chatBackend, RequestIDPrefix: "mm-", Workers: 3},
			InputLen: 40, OutputLen: 9, RangeRatio: RangeRatio{0.3, 0.2},
		},
		BaseItemsPerRequest: 2, NumMMItemsRangeRatio: 0.5,
		Limits:  []MMLimit{{"image", 2}, {"video", 1}, {"audio", 1}},
		Buckets: buckets,
	}
	var logged []string
	o.Logf = func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }
	reqs, err := SampleRandomMM(tok, o)
	if err != nil {
		t.Fatal(err)
	}
	// Normalised: 0.25 and 0.75; count in [max(0, ⌊2·0.5⌋), min(2, ⌈2·1.5⌉)] = [1, 2].
	ref := referenceRandomMM(tok, o, 1, 2, []MMBucket{{8, 12, 1, 0.25}, {16, 4, 1, 0.75}})
	counts := map[int]int{}
	for i, r := range reqs {
		want := ref.reqs[i]
		if r.Prompt != want.Prompt || r.PromptLen != want.PromptLen || r.ExpectedOutputLen != want.ExpectedOutputLen || r.RequestID != want.RequestID {
			t.Fatalf("request %d text differs:\n got %q %d %d %q\nwant %q %d %d %q", i,
				r.Prompt, r.PromptLen, r.ExpectedOutputLen, r.RequestID, want.Prompt, want.PromptLen, want.ExpectedOutputLen, want.RequestID)
		}
		var sizes [][2]int
		for _, part := range r.MultiModal {
			sizes = append(sizes, imageSize(t, part))
		}
		if !reflect.DeepEqual(sizes, ref.sizes[i]) {
			t.Fatalf("request %d images %v, want %v", i, sizes, ref.sizes[i])
		}
		counts[len(sizes)]++
	}
	if counts[1] == 0 || counts[2] == 0 || len(counts) != 2 {
		t.Errorf("item counts %v: want both 1 and 2, nothing else", counts)
	}
	wantLogs := []string{
		"Sampling input_len from [27, 51] and output_len from [7, 11]",
		"Normalized bucket config: {(8, 12, 1): 0.25, (16, 4, 1): 0.75}",
		"Updated mm-limit-per-prompt: {'image': 2}",
		"Sampling number of multimodal items from [1, 2]",
	}
	if len(logged) < len(wantLogs) || !reflect.DeepEqual(logged[:len(wantLogs)], wantLogs) {
		t.Errorf("logged %q\nwant %q...", logged, wantLogs)
	}

	// One worker or many: the same bytes.
	o.Workers, o.Logf = 1, nil
	again, err := SampleRandomMM(tok, o)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, reqs) {
		t.Error("requests differ between 3 workers and 1")
	}
}

func TestSampleRandomMMWithoutItemsIsRandom(t *testing.T) {
	tok := newBPETokenizer()
	ro := RandomOptions{Env: &Env{NumPrompts: 20, Seed: 3, RequestIDPrefix: "r"}, InputLen: 50, OutputLen: 10, PrefixLen: 6}
	want, err := SampleRandom(tok, ro)
	if err != nil {
		t.Fatal(err)
	}
	got, err := SampleRandomMM(tok, RandomMMOptions{RandomOptions: ro,
		BaseItemsPerRequest: 0, Limits: DefaultMMLimits(), Buckets: DefaultMMBuckets()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if len(got[i].MultiModal) != 0 {
			t.Fatalf("request %d has %d items", i, len(got[i].MultiModal))
		}
		got[i].MultiModal = nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Error("random-mm without media differs from random")
	}
}

func TestSampleRandomMMChat(t *testing.T) {
	reqs, err := SampleRandomMM(newBPETokenizer(), RandomMMOptions{
		RandomOptions:       RandomOptions{Env: &Env{NumPrompts: 2, Seed: 1, EnableMultimodalChat: true}, InputLen: 8, OutputLen: 4},
		BaseItemsPerRequest: 1, Limits: DefaultMMLimits(), Buckets: []MMBucket{{2, 3, 1, 1}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		var msgs []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(r.ChatMessages, &msgs); err != nil {
			t.Fatal(err)
		}
		if r.Prompt != "" || r.MultiModal != nil || len(msgs) != 1 || msgs[0].Role != "user" || len(msgs[0].Content) != 2 {
			t.Fatalf("request %+v", r)
		}
		if !strings.HasPrefix(string(msgs[0].Content[0]), `{"text":`) || imageSize(t, msgs[0].Content[1]) != [2]int{3, 2} {
			t.Errorf("content %s", r.ChatMessages)
		}
	}
}

func TestMMItemDrawsInterleaveWithPixels(t *testing.T) {
	plan := &mmPlan{minItems: 2, maxItems: 4, limits: []MMLimit{{"image", 9}}, buckets: []MMBucket{{1, 1, 1, 0.5}, {2, 2, 1, 0.5}}}
	rng := pyrand.NewGenerator(21)
	var after []float64
	if err := plan.drawItems(rng, nil, func(MMBucket) { after = append(after, rng.Random()) }); err != nil {
		t.Fatal(err)
	}
	ref := pyrand.NewGenerator(21)
	count, _ := ref.Integers(2, 5, 1)
	if int64(len(after)) != count[0] {
		t.Fatalf("%d items, want %d", len(after), count[0])
	}
	for i, got := range after {
		ref.Random() // the choice
		if want := ref.Random(); got != want {
			t.Fatalf("item %d: the item was not generated right after its draw", i)
		}
	}
}

func TestMMItemCapRenormalises(t *testing.T) {
	// Video has a cap of 0: drawing it zeroes its bucket and the rest is
	// renormalised, so every item ends up an image.
	plan := &mmPlan{minItems: 3, maxItems: 3, limits: []MMLimit{{"image", 5}, {"video", 0}},
		buckets: []MMBucket{{4, 4, 1, 0.1}, {4, 4, 8, 0.9}}}
	var got []MMBucket
	if err := plan.drawItems(pyrand.NewGenerator(2), nil, func(b MMBucket) { got = append(got, b) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Frames != 1 || got[1].Frames != 1 || got[2].Frames != 1 {
		t.Errorf("items %v", got)
	}
	// Nothing left to draw: Python warns and stops short.
	plan = &mmPlan{minItems: 2, maxItems: 2, limits: []MMLimit{{"image", 1}}, buckets: []MMBucket{{4, 4, 1, 1}}}
	var warned []string
	got = nil
	if err := plan.drawItems(pyrand.NewGenerator(2), func(f string, a ...any) { warned = append(warned, fmt.Sprintf(f, a...)) },
		func(b MMBucket) { got = append(got, b) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(warned) != 1 || warned[0] != "Exhausted all multimodal items of modality image" {
		t.Errorf("items %v, warnings %q", got, warned)
	}
}

func TestSampleRandomMMErrors(t *testing.T) {
	base := func() RandomMMOptions {
		return RandomMMOptions{RandomOptions: RandomOptions{Env: &Env{NumPrompts: 2}, InputLen: 8, OutputLen: 4}, BaseItemsPerRequest: 1, Limits: DefaultMMLimits(), Buckets: DefaultMMBuckets()}
	}
	cases := []struct {
		name   string
		edit   func(o *RandomMMOptions)
		want   string
		python bool
	}{
		{"backend", func(o *RandomMMOptions) { o.Backend = openAIBackend },
			"Multi-modal content (images) is not supported on backend 'openai'; use one of ['openai-audio', 'openai-chat'].", true},
		{"batch", func(o *RandomMMOptions) { o.BatchSize = 4 }, "batchsize > 1 is not supported for RandomMultiModalDataset.", true},
		{"text range", func(o *RandomMMOptions) { o.RangeRatio.Output = 1 }, "output_range_ratio must be in [0, 1).", true},
		{"item range", func(o *RandomMMOptions) { o.NumMMItemsRangeRatio = 1.5 }, "num_mm_items_range_ratio must be in [0, 1].", true},
		{"frames 0", func(o *RandomMMOptions) { o.Buckets = []MMBucket{{4, 4, 0, 1}} }, "Invalid multimodal item configuration: (4, 4, 0)", true},
		{"modality without limit", func(o *RandomMMOptions) { o.Limits = []MMLimit{{"video", 1}, {"audio", 2}} },
			"Modality image is not in limit_mm_per_prompt: dict_keys(['video', 'audio'])", true},
		{"negative", func(o *RandomMMOptions) { o.Buckets = []MMBucket{{4, 4, 1, 1}, {8, 8, 1, -0.5}} }, "Bucket config values must be non-negative.", true},
		{"all zero", func(o *RandomMMOptions) { o.Buckets = []MMBucket{{4, 4, 1, 0}} }, "Got invalid bucket config. Bucket config values must be non-zero.", true},
		{"zero-probability bucket without limit", func(o *RandomMMOptions) { o.Limits = []MMLimit{{"image", 3}} },
			"Modality video is not in limit_mm_per_prompt: dict_keys(['image'])", true},
		{"min above max", func(o *RandomMMOptions) {
			o.BaseItemsPerRequest = 5
			o.Buckets = o.Buckets[:2]
			o.Limits = []MMLimit{{"image", 3}}
		},
			"Min num mm items is greater than max mm items: 5 > 3", true},
		{"empty image", func(o *RandomMMOptions) { o.Buckets = []MMBucket{{0, 4, 1, 1}} }, "--random-mm-bucket-config: bucket (0, 4, 1): height and width must be positive", false},
		{"video too wide", func(o *RandomMMOptions) { o.Buckets = []MMBucket{{4, 4, 1, 1}, {4, 70000, 2, 1}} },
			"--random-mm-bucket-config: bucket (4, 70000, 2): height and width must be at most 65535 for a video", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := base()
			c.edit(&o)
			_, err := SampleRandomMM(newBPETokenizer(), o)
			checkDatasetError(t, err, c.want, c.python)
		})
	}
}

func TestParseMMLimits(t *testing.T) {
	got, err := ParseMMLimits(` {"video": 0, "image": 3} `)
	if err != nil || !reflect.DeepEqual(got, []MMLimit{{"video", 0}, {"image", 3}}) {
		t.Errorf("got %v, %v", got, err)
	}
	for _, bad := range []string{`[1]`, `{"image": 1.5}`, `{"image": "3"}`, `{"image": 1`} {
		if _, err := ParseMMLimits(bad); err == nil || !strings.Contains(err.Error(), "--random-mm-limit-mm-per-prompt") {
			t.Errorf("ParseMMLimits(%s): %v", bad, err)
		}
	}
}

// The default bucket config draws 720×1280 images half of the time; these
// show what one costs to generate and to encode.
func BenchmarkRandomImage720p(b *testing.B) {
	rng := pyrand.NewGenerator(0)
	b.ReportAllocs()
	for b.Loop() {
		randomImage(rng, 1280, 720)
	}
}

func BenchmarkEncodeImage720p(b *testing.B) {
	img := randomImage(pyrand.NewGenerator(0), 1280, 720)
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: pilJPEGQuality}); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(imageURLPart(buf.Bytes()))), "part-bytes")
	}
}
