package datasets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/datasets/pyrand"
	"github.com/stampede-bench/stampede/internal/py"
)

// MMBucket is one entry of --random-mm-bucket-config: media items of
// Height×Width pixels and Frames frames (1 = image, more = video), drawn
// with weight Probability.
type MMBucket struct {
	Height, Width, Frames int
	Probability           float64
}

// MMLimit is one entry of --random-mm-limit-mm-per-prompt: at most Limit
// items of Modality ("image", "video") per request.
type MMLimit struct {
	Modality string
	Limit    int
}

// DefaultMMBuckets is --random-mm-bucket-config's default.
func DefaultMMBuckets() []MMBucket {
	return []MMBucket{{256, 256, 1, 0.5}, {720, 1280, 1, 0.5}, {720, 1280, 16, 0}}
}

// DefaultMMLimits is --random-mm-limit-mm-per-prompt's default.
func DefaultMMLimits() []MMLimit { return []MMLimit{{"image", 255}, {"video", 1}} }

// ParseMMLimits reads --random-mm-limit-mm-per-prompt, a JSON object of
// integer caps, keeping its key order (Python's dict order shows in logs
// and errors).
func ParseMMLimits(s string) ([]MMLimit, error) {
	bad := func(detail string) error {
		return fmt.Errorf("--random-mm-limit-mm-per-prompt %q: want a JSON object of integer caps such as {\"image\": 3, \"video\": 0}: %s", s, detail)
	}
	entry, err := parseTraceEntry(bytes.TrimSpace([]byte(s)))
	if err != nil {
		return nil, bad(err.Error())
	}
	out := make([]MMLimit, 0, len(entry.keys))
	for _, k := range entry.keys {
		n, err := strconv.Atoi(string(entry.values[k]))
		if err != nil {
			return nil, bad(fmt.Sprintf("%q is %s", k, entry.values[k]))
		}
		out = append(out, MMLimit{k, n})
	}
	return out, nil
}

// RandomMMOptions are the `random-mm` dataset's inputs: those of `random`
// (with the Env's --backend, which Python requires to be multimodal
// (openai-chat, openai-audio), no name skipping the check; --enable-multimodal-chat, which
// makes the prompt and the images one user chat message (ChatMessages)
// instead of Prompt + MultiModal; and Workers, which also bound the JPEG
// encoding) plus the media ones, parsed. BatchSize must be 1 (0 is taken
// as 1).
type RandomMMOptions struct {
	RandomOptions
	// BaseItemsPerRequest is --random-mm-base-items-per-request (n).
	BaseItemsPerRequest int
	// NumMMItemsRangeRatio is --random-mm-num-mm-items-range-ratio (r):
	// each request carries a uniform count in [max(0, ⌊n(1-r)⌋),
	// min(Σ limits, ⌈n(1+r)⌉)].
	NumMMItemsRangeRatio float64
	Limits               []MMLimit  // --random-mm-limit-mm-per-prompt, in JSON order
	Buckets              []MMBucket // --random-mm-bucket-config, in dict order
}

// SampleRandomMM is RandomMultiModalDataset.sample. The text is
// built as `random` builds it (SampleRandom) from the same private
// numpy.default_rng(Seed), and the same generator then draws each
// request's media right after its text, in Python's order:
//
//   - the item count, rng.integers(min, max+1);
//   - per item, a bucket by rng.choice(buckets, p=probabilities) (one
//     double against the cumulative sums); a modality at its cap has its
//     buckets zeroed and the rest renormalised before the next draw;
//   - per image of H×W, rng.integers(0, 256, (H, W, 3), dtype=uint8),
//     which numpy fills four bytes per 32-bit draw, low byte first;
//   - per video of T frames, rng.integers(0, 256, (T, H, W, 3),
//     dtype=uint8), one fill for the whole clip.
//
// So prompts, lengths, item counts, sizes, frame counts and pixels match
// Python for the same seed and tokenizer. The encoded bytes do not: Python
// encodes images with PIL (libjpeg), stampede with Go's image/jpeg at
// PIL's default quality 75, so the data URLs differ in content and
// somewhat in size; videos are MP4 files as Python's, but of Motion JPEG
// frames where OpenCV writes MPEG-4 Part 2 (see video.go).
func SampleRandomMM(tok Tokenizer, o RandomMMOptions) ([]Request, error) {
	var all []Request
	err := StreamRandomMM(tok, o, func(batch []Request) error {
		all = append(all, batch...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return all, nil
}

// StreamRandomMM is SampleRandomMM handing the requests to emit a window
// at a time (random_window.go); a window's media are encoded before it is
// emitted.
func StreamRandomMM(tok Tokenizer, o RandomMMOptions, emit Emit) error {
	if tok == nil {
		return fmt.Errorf("dataset random-mm: a tokenizer is required (drop --skip-tokenizer-init)")
	}
	if o.Backend.Name != "" && !o.Backend.Multimodal {
		return valueError(fmt.Sprintf("Multi-modal content (images) is not supported on backend %s; use one of ['openai-audio', 'openai-chat'].", py.StrRepr(o.Backend.Name)))
	}
	if o.BatchSize != 0 && o.BatchSize != 1 {
		return &py.Error{Type: "NotImplementedError", Msg: "batchsize > 1 is not supported for RandomMultiModalDataset."}
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if o.Seed < 0 {
		return fmt.Errorf("--seed %d: numpy.random.default_rng needs a non-negative seed", o.Seed)
	}
	rng := pyrand.NewGenerator(uint64(o.Seed))
	n := max(o.NumPrompts, 0)
	inputLens, outputLens, offsets, err := samplingParams(rng, n, o.RangeRatio, o.InputLen, o.OutputLen, tok, logf)
	if err != nil {
		return err
	}
	plan, err := newMMPlan(o.BaseItemsPerRequest, o.NumMMItemsRangeRatio, o.Limits, o.Buckets, logf)
	if err != nil {
		return err
	}
	for _, b := range plan.buckets {
		if b.Height <= 0 || b.Width <= 0 {
			return fmt.Errorf("--random-mm-bucket-config: bucket %s: height and width must be positive", bucketKeyRepr(b))
		}
		if b.Frames > 1 {
			if err := checkVideoBucket(b); err != nil {
				return err
			}
		}
	}

	vocab := tok.VocabSize()
	allowed := allowedTokens(vocab, tok.AllSpecialIDs())
	if len(allowed) == 0 {
		return fmt.Errorf("dataset random-mm: the tokenizer's vocabulary (%d ids) has no non-special token", vocab)
	}
	draw := vocabDraw(rng, vocab)
	prefix, err := randomPrefix(tok, rng, allowed, o.PrefixLen, draw, logf)
	if err != nil {
		return fmt.Errorf("dataset random-mm: %w", err)
	}
	g := &tokenWindows{tok: tok, prefix: prefix, prefixLen: o.PrefixLen, allowed: allowed,
		inputLens: inputLens, offsets: offsets, draw: draw, workers: o.Workers, window: o.window}

	// The generator is consumed in Python's order, request by request:
	// text padding, item count, then bucket and pixels item by item. Only
	// the JPEG encoding runs in parallel; a window waits for its media.
	enc := newJPEGPool(o.Workers)
	defer enc.close()
	var slots [][]*json.RawMessage
	mismatch := 0
	var reqs []Request
	err = g.build("random-mm", func(i int, f *lengthFix) error {
		mismatch += f.mismatch
		var parts []*json.RawMessage
		err := plan.drawItems(rng, logf, func(b MMBucket) {
			part := new(json.RawMessage)
			parts = append(parts, part)
			if b.Frames > 1 {
				enc.encodeClip(newRandomClip(rng, b.Width, b.Height, b.Frames), part)
			} else {
				enc.encode(randomImage(rng, b.Width, b.Height), part)
			}
		})
		slots = append(slots, parts)
		return err
	}, func(lo int, fixes []*lengthFix) error {
		if err := enc.wait(); err != nil {
			return fmt.Errorf("dataset random-mm: %w", err)
		}
		reqs = reqs[:0]
		for j, f := range fixes {
			i := lo + j
			var media []json.RawMessage
			for _, p := range slots[j] {
				media = append(media, *p)
			}
			r := Request{
				Prompt:            f.prompt,
				PromptLen:         f.count,
				ExpectedOutputLen: int(outputLens[i]),
				RequestID:         o.RequestIDPrefix + strconv.Itoa(i),
			}
			if o.EnableMultimodalChat {
				r.ChatMessages = userChatMessages(f.prompt, media...)
				r.Prompt = ""
			} else {
				r.MultiModal = media
			}
			reqs = append(reqs, r)
		}
		slots = slots[:0]
		return emit(reqs)
	})
	if err != nil {
		return err
	}
	logMismatch(logf, mismatch)
	return nil
}

// mmPlan is the result of get_mm_item_sampling_params: the item count
// range, the limits of the modalities that can be drawn, and the
// normalised buckets.
type mmPlan struct {
	minItems, maxItems int
	limits             []MMLimit
	buckets            []MMBucket
}

// newMMPlan checks and normalises the media options in Python's order.
func newMMPlan(base int, ratio float64, limits []MMLimit, buckets []MMBucket, logf func(string, ...any)) (*mmPlan, error) {
	if !(ratio >= 0 && ratio <= 1) {
		return nil, valueError("num_mm_items_range_ratio must be in [0, 1].")
	}
	for _, b := range buckets {
		m, err := bucketModality(b)
		if err != nil {
			return nil, err
		}
		if limitOf(limits, m) == nil {
			keys := make([]string, len(limits))
			for i, l := range limits {
				keys[i] = l.Modality
			}
			return nil, valueError(fmt.Sprintf("Modality %s is not in limit_mm_per_prompt: dict_keys(%s)", m, pyStrListRepr(keys)))
		}
	}
	norm, err := normalizeBuckets(buckets)
	if err != nil {
		return nil, err
	}
	logf("Normalized bucket config: %s", bucketsRepr(norm))
	p := &mmPlan{buckets: norm}
	for _, l := range limits {
		for _, b := range norm {
			if m, _ := bucketModality(b); m == l.Modality {
				p.limits = append(p.limits, l)
				break
			}
		}
	}
	if len(p.limits) == 0 {
		return nil, valueError("No valid limits for modalities present in bucket_config.")
	}
	parts := make([]string, len(p.limits))
	total := 0
	for i, l := range p.limits {
		parts[i] = py.StrRepr(l.Modality) + ": " + strconv.Itoa(l.Limit)
		total += l.Limit
	}
	logf("Updated mm-limit-per-prompt: {%s}", strings.Join(parts, ", "))
	p.maxItems = min(total, int(math.Ceil(float64(base)*(1+ratio))))
	p.minItems = max(0, int(math.Floor(float64(base)*(1-ratio))))
	if p.minItems > p.maxItems {
		return nil, valueError(fmt.Sprintf("Min num mm items is greater than max mm items: %d > %d", p.minItems, p.maxItems))
	}
	logf("Sampling number of multimodal items from [%d, %d]", p.minItems, p.maxItems)
	return p, nil
}

// drawItems is get_mm_item_iterator for one request, consumed the way
// Python's list comprehension consumes it: after each bucket draw it calls
// made, which must generate that item (taking its pixels off rng) before
// the next draw.
func (p *mmPlan) drawItems(rng *pyrand.Generator, logf func(string, ...any), made func(MMBucket)) error {
	count, err := rng.Integers(int64(p.minItems), int64(p.maxItems)+1, 1)
	if err != nil {
		return err
	}
	want := int(count[0])
	buckets := append([]MMBucket(nil), p.buckets...)
	counter := map[string]int{}
	for drawn := 0; drawn < want; {
		b := chooseBucket(rng, buckets)
		m, _ := bucketModality(b)
		if counter[m] < limitOf(p.limits, m).Limit {
			counter[m]++
			drawn++
			made(b)
			continue
		}
		allZero := true
		for i := range buckets {
			if bm, _ := bucketModality(buckets[i]); bm == m {
				buckets[i].Probability = 0
			}
			allZero = allZero && buckets[i].Probability == 0
		}
		if allZero {
			logf("Exhausted all multimodal items of modality %s", m)
			break
		}
		if buckets, err = normalizeBuckets(buckets); err != nil {
			return err
		}
	}
	return nil
}

// chooseBucket is rng.choice(keys, p=probabilities) with replacement:
// cdf = cumsum(p) / cdf[-1], then the first index whose cdf exceeds one
// uniform double (searchsorted side="right").
func chooseBucket(rng *pyrand.Generator, buckets []MMBucket) MMBucket {
	cdf := make([]float64, len(buckets))
	sum := 0.0
	for i, b := range buckets {
		sum += b.Probability
		cdf[i] = sum
	}
	u := rng.Random()
	for i := range cdf {
		if cdf[i]/sum > u {
			return buckets[i]
		}
	}
	return buckets[len(buckets)-1]
}

// normalizeBuckets is normalize_bucket_config: negative weights are an
// error, zero ones are dropped, the rest divided by their sum.
func normalizeBuckets(buckets []MMBucket) ([]MMBucket, error) {
	var out []MMBucket
	total := 0.0
	for _, b := range buckets {
		if b.Probability < 0 {
			return nil, valueError("Bucket config values must be non-negative.")
		}
	}
	for _, b := range buckets {
		if b.Probability > 0 {
			out = append(out, b)
			total += b.Probability
		}
	}
	if len(out) == 0 {
		return nil, valueError("Got invalid bucket config. Bucket config values must be non-zero.")
	}
	for i := range out {
		out[i].Probability /= total
	}
	return out, nil
}

// bucketModality is map_config_to_modality.
func bucketModality(b MMBucket) (string, error) {
	switch {
	case b.Frames == 1:
		return "image", nil
	case b.Frames > 1:
		return "video", nil
	}
	return "", valueError("Invalid multimodal item configuration: " + bucketKeyRepr(b))
}

func limitOf(limits []MMLimit, modality string) *MMLimit {
	for i := range limits {
		if limits[i].Modality == modality {
			return &limits[i]
		}
	}
	return nil
}

// bucketKeyRepr is repr((H, W, T)).
func bucketKeyRepr(b MMBucket) string {
	return fmt.Sprintf("(%d, %d, %d)", b.Height, b.Width, b.Frames)
}

// bucketsRepr is repr of a bucket dict: {(H, W, T): p, ...}.
func bucketsRepr(buckets []MMBucket) string {
	parts := make([]string, len(buckets))
	for i, b := range buckets {
		parts[i] = bucketKeyRepr(b) + ": " + py.FloatRepr(b.Probability)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// RandomMMFlags are the random-mm dataset's options.
type RandomMMFlags struct {
	RandomMMBaseItemsPerRequest  int            `long:"random-mm-base-items-per-request" default:"1" description:"Mean media items per request."`
	RandomMMNumMMItemsRangeRatio float64        `long:"random-mm-num-mm-items-range-ratio" default:"0.0" description:"Spread r in [0, 1] of the item count around its mean."`
	RandomMMLimitMMPerPrompt     JSONFlag       `long:"random-mm-limit-mm-per-prompt" default:"{\"image\":255,\"video\":1}" default-mask:"{'image': 255, 'video': 1}" description:"JSON object of per-modality item caps."`
	RandomMMBucketConfig         MMBucketConfig `long:"random-mm-bucket-config" default:"{(256, 256, 1): 0.5, (720, 1280, 1): 0.5, (720, 1280, 16): 0.0}" description:"Python dict {(height, width, frames): probability}; frames 1 is an image."`
}

var randomMMDataset = &Dataset{
	Name:           "random-mm",
	Synthetic:      true,
	ExactOutputLen: true,
	Stream: func(env *Env, emit Emit) error {
		o, err := randomOptions(env)
		if err != nil {
			return err
		}
		mm := &env.Flags.RandomMMFlags
		limits, err := ParseMMLimits(string(mm.RandomMMLimitMMPerPrompt))
		if err != nil {
			return valueError(err.Error())
		}
		return StreamRandomMM(env.Tokenizer, RandomMMOptions{
			RandomOptions: o, BaseItemsPerRequest: mm.RandomMMBaseItemsPerRequest,
			NumMMItemsRangeRatio: mm.RandomMMNumMMItemsRangeRatio, Limits: limits, Buckets: mm.RandomMMBucketConfig,
		}, emit)
	},
}
