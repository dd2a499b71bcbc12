package datasets

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/datasets/pyrand"
	"github.com/stampede-bench/stampede/internal/py"
)

// SampleTimedTrace is TimedTrace.sample: the first --num-prompts lines of
// the --dataset-path trace become requests whose prompt is a list of token
// ids (PromptIDs), sent at TimestampSec = timestamp ×
// --timed-trace-sec-multiplier; the --timed-trace-label-* flags name each
// entry's fields. Ids are --request-id-prefix + line index. There is no
// oversampling and no shuffling; Python's global generators are reseeded
// with 0, as TimedTrace's constructor does.
//
// The prompt of an entry with input length L and hash ids h1, h2, ...:
// for each h in turn, size = min(--timed-trace-chunk-hash-size,
// remaining L), the tokens
// random.Random(hash(f"{h}:{size}") & 0xFFFFFFFF).choices(vocab, k=size)
// where vocab is the sorted ids of tokenizer.get_vocab() without the
// special ids; stop once L tokens are placed. Too few hash ids give a
// shorter prompt; PromptLen is the actual length. Python's hash() of a str
// depends on PYTHONHASHSEED (see pyStrHash), read from the environment as
// CPython reads it: unset, its prompts differ from run to run exactly as
// Python's do; set, they reproduce a Python run with the same value.
func SampleTimedTrace(env *Env) ([]Request, error) {
	hashSeed, err := ParsePythonHashSeed(os.Getenv("PYTHONHASHSEED"))
	if err != nil {
		return nil, valueError(err.Error())
	}
	return sampleTimedTrace(env, hashSeed, "")
}

// sampleTimedTrace is SampleTimedTrace with Python's str hash keyed by
// hashSeed (PYTHONHASHSEED, see ParsePythonHashSeed: nil draws a random
// key, as an unset PYTHONHASHSEED does) and computed by hashAlgorithm,
// Python's sys.hash_info.algorithm: HashSipHash13 (Python 3.11+, also "")
// or HashSipHash24 (Python 3.10).
func sampleTimedTrace(env *Env, hashSeed *uint32, hashAlgorithm string) ([]Request, error) {
	tok, f := env.Tokenizer, &env.Flags.TimedTraceFlags
	if tok == nil {
		return nil, fmt.Errorf("dataset timed_trace: a tokenizer is required (drop --skip-tokenizer-init)")
	}
	hasher, err := newPyStrHash(hashSeed, hashAlgorithm)
	if err != nil {
		return nil, fmt.Errorf("dataset timed_trace: %w", err)
	}
	if env.Globals.Random != nil {
		env.Globals.Random.Seed(0)
	}
	if env.Globals.NumPy != nil {
		env.Globals.NumPy.Seed(0)
	}
	if env.Logf != nil {
		env.Logf(`timed-trace: chunk_size: %d, sec_multiplier: %s, label_ts: "%s", label_input_length: "%s", label_output_length: "%s", label_hash_ids: "%s"`,
			f.TimedTraceChunkHashSize, py.FloatRepr(f.TimedTraceSecMultiplier), f.TimedTraceLabelTimestamp, f.TimedTraceLabelInputLength, f.TimedTraceLabelOutputLength, f.TimedTraceLabelHashIDs)
	}
	if env.Path == "" {
		return nil, valueError("dataset_path must be provided for loading data.")
	}
	file, err := os.Open(env.Path)
	if err != nil {
		return nil, fmt.Errorf("dataset timed_trace: %w", err)
	}
	defer file.Close()

	ex := &traceExpander{tok: tok, hash: hasher, chunk: f.TimedTraceChunkHashSize, cache: map[string][]int32{}}
	var reqs []Request
	rd := bufio.NewReaderSize(newLineLimiter(file, MaxLineBytes), 1<<16)
	for ind := 0; len(reqs) < env.NumPrompts; ind++ {
		line, err := rd.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			break
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("dataset timed_trace %s: %w", env.Path, err)
		}
		r, err := f.request(ex, line, ind, env.RequestIDPrefix)
		if err != nil {
			return nil, datasetError("timed_trace", lineError(env.Path, ind+1, err))
		}
		reqs = append(reqs, r)
	}
	return reqs, nil
}

// request turns one trace line into a request, checking the fields in
// Python's order.
func (f *TimedTraceFlags) request(ex *traceExpander, line []byte, ind int, idPrefix string) (Request, error) {
	entry, err := parseTraceEntry(bytes.TrimSpace(line))
	if err != nil {
		return Request{}, err
	}
	field := func(what, label, flag string) (json.RawMessage, error) {
		v, ok := entry.get(label)
		if !ok {
			return nil, valueError(fmt.Sprintf("%s field '%s' not found in trace entry. Available fields: %s. "+
				"Use --%s to specify the correct field name. (The flag is --timed-trace-%[4]s.)", what, label, pyStrListRepr(entry.keys), flag))
		}
		return v, nil
	}
	intField := func(what, label, flag string) (int, error) {
		v, err := field(what, label, flag)
		if err != nil {
			return 0, err
		}
		return traceInt(v, label)
	}
	inputLen, err := intField("Input length", f.TimedTraceLabelInputLength, "label-input-length")
	if err != nil {
		return Request{}, err
	}
	outputLen, err := intField("Output length", f.TimedTraceLabelOutputLength, "label-output-length")
	if err != nil {
		return Request{}, err
	}
	var hashIDs []json.RawMessage
	if raw, present := entry.values[f.TimedTraceLabelHashIDs]; present {
		if err := json.Unmarshal(raw, &hashIDs); err != nil || string(raw) == "null" {
			return Request{}, fmt.Errorf("%q must be a list of hash ids, got %s", f.TimedTraceLabelHashIDs, raw)
		}
	}
	ids, err := ex.expand(hashIDs, inputLen)
	if err != nil {
		return Request{}, err
	}
	tsRaw, err := field("Timestamp", f.TimedTraceLabelTimestamp, "label-timestamp")
	if err != nil {
		return Request{}, err
	}
	ts, err := traceFloat(tsRaw, f.TimedTraceLabelTimestamp)
	if err != nil {
		return Request{}, err
	}
	return Request{
		PromptIDs:         ids,
		PromptLen:         len(ids),
		ExpectedOutputLen: outputLen,
		RequestID:         idPrefix + strconv.Itoa(ind),
		TimestampSec:      ts * f.TimedTraceSecMultiplier,
	}, nil
}

// traceExpander is TimedTrace._expand_prompt with its per-key cache.
type traceExpander struct {
	tok   Tokenizer
	hash  pyStrHash
	chunk int
	vocab []int32 // sorted non-special vocabulary ids, built on first use
	cache map[string][]int32
}

func (ex *traceExpander) expand(hashIDs []json.RawMessage, target int) ([]int32, error) {
	var out []int32
	for _, raw := range hashIDs {
		size := target
		if target >= ex.chunk {
			size = ex.chunk
		}
		h, err := pyStrOfJSON(raw)
		if err != nil {
			return nil, err
		}
		key := h + ":" + strconv.Itoa(size)
		ids, ok := ex.cache[key]
		if !ok {
			ids = ex.sample(size, uint32(uint64(ex.hash.sum(key))))
			ex.cache[key] = ids
		}
		out = append(out, ids...)
		target -= size
		if target <= 0 {
			break
		}
	}
	return out, nil
}

// sample is random.Random(seed).choices(vocab, k=n).
func (ex *traceExpander) sample(n int, seed uint32) []int32 {
	if ex.vocab == nil {
		ex.vocab = nonSpecialVocab(ex.tok)
	}
	if n <= 0 || len(ex.vocab) == 0 {
		return []int32{}
	}
	idx := pyrand.NewRandom(int64(seed)).Choices(len(ex.vocab), n)
	ids := make([]int32, n)
	for i, j := range idx {
		ids[i] = ex.vocab[j]
	}
	return ids
}

// vocabLister is a tokenizer that lists the ids of its whole vocabulary,
// added tokens included: the values of Hugging Face's get_vocab().
type vocabLister interface {
	VocabIDs() []int32
}

// tokenLookup is a tokenizer that tells which ids have a token.
type tokenLookup interface {
	IDToToken(id int32) (string, bool)
}

// nonSpecialVocab is sorted(get_vocab().values()) without the special ids.
// A tokenizer that cannot list its vocabulary (no VocabIDs) is taken to
// hold the ids below VocabSize that it knows, plus, when it can look ids
// up, the added tokens that follow them without a gap (where Hugging Face
// tokenizers put added tokens).
func nonSpecialVocab(tok Tokenizer) []int32 {
	var ids []int32
	switch t := tok.(type) {
	case vocabLister:
		ids = append(ids, t.VocabIDs()...)
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	case tokenLookup:
		for id := int32(0); ; id++ {
			if _, ok := t.IDToToken(id); ok {
				ids = append(ids, id)
			} else if int(id) >= tok.VocabSize() {
				break
			}
		}
	default:
		for id := range int32(tok.VocabSize()) {
			ids = append(ids, id)
		}
	}
	special := make(map[int32]bool, len(tok.AllSpecialIDs()))
	for _, id := range tok.AllSpecialIDs() {
		special[id] = true
	}
	out := ids[:0]
	for i, id := range ids {
		if !special[id] && (i == 0 || id != ids[i-1]) {
			out = append(out, id)
		}
	}
	return out
}

// traceEntry is one JSON object with its keys in file order, as a Python
// dict keeps them (a repeated key keeps its first place and last value).
type traceEntry struct {
	keys   []string
	values map[string]json.RawMessage
}

// get is entry.get(key): a missing key and null are both None.
func (e traceEntry) get(key string) (json.RawMessage, bool) {
	v, ok := e.values[key]
	if !ok || string(v) == "null" {
		return nil, false
	}
	return v, true
}

func parseTraceEntry(line []byte) (traceEntry, error) {
	e := traceEntry{values: map[string]json.RawMessage{}}
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return e, fmt.Errorf("want a JSON object, got %q", truncate(string(line), 80))
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return e, fmt.Errorf("malformed JSON object: %w", err)
		}
		key := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return e, fmt.Errorf("malformed JSON object at key %q: %w", key, err)
		}
		if _, seen := e.values[key]; !seen {
			e.keys = append(e.keys, key)
		}
		e.values[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return e, fmt.Errorf("malformed JSON object: %w", err)
	}
	if dec.More() {
		return e, fmt.Errorf("extra data after the JSON object")
	}
	return e, nil
}

// traceInt reads a length field, which must be a JSON integer.
func traceInt(raw json.RawMessage, label string) (int, error) {
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("field %q must be an integer, got %s", label, raw)
	}
	return int(v), nil
}

// traceFloat is float(value) for a JSON number or numeric string.
func traceFloat(raw json.RawMessage, label string) (float64, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		v, err := py.ParseFloat(s)
		if err != nil {
			return 0, valueError(fmt.Sprintf("could not convert string to float: %s", py.StrRepr(s)))
		}
		return v, nil
	}
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, fmt.Errorf("field %q must be a number, got %s", label, raw)
	}
	return v, nil
}

// pyStrOfJSON is f"{h}" for a hash id json.loads produced: ints print in
// decimal, floats as repr, strings as themselves, true/false/null as
// True/False/None.
func pyStrOfJSON(raw json.RawMessage) (string, error) {
	n, err := py.Loads(string(raw))
	if err != nil {
		return "", fmt.Errorf("malformed hash id %s: %w", raw, err)
	}
	if n.Kind == py.JSONArray || n.Kind == py.JSONObject {
		return "", fmt.Errorf("hash id %s: want a number or a string", raw)
	}
	return n.PyStr(), nil
}

// pyStrListRepr is repr(list_of_str).
func pyStrListRepr(items []string) string {
	parts := make([]string, len(items))
	for i, s := range items {
		parts[i] = py.StrRepr(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// lineError places err at a line of path; a *py.Error keeps Python's
// text first and gains the place after it.
func lineError(path string, line int, err error) error {
	var pyErr *py.Error
	if errors.As(err, &pyErr) {
		return withPlace(pyErr, path, line)
	}
	return fmt.Errorf("%s line %d: %w", path, line, err)
}

// TimedTraceFlags are the timed_trace dataset's options.
type TimedTraceFlags struct {
	TimedTraceChunkHashSize     int     `long:"timed-trace-chunk-hash-size" default:"16" description:"Tokens generated per hash id."`
	TimedTraceSecMultiplier     float64 `long:"timed-trace-sec-multiplier" default:"1" description:"Factor turning trace timestamps into seconds."`
	TimedTraceLabelTimestamp    string  `long:"timed-trace-label-timestamp" default:"timestamp" description:"JSON key of the timestamp."`
	TimedTraceLabelInputLength  string  `long:"timed-trace-label-input-length" default:"input_length" description:"JSON key of the input length."`
	TimedTraceLabelOutputLength string  `long:"timed-trace-label-output-length" default:"output_length" description:"JSON key of the output length."`
	TimedTraceLabelHashIDs      string  `long:"timed-trace-label-hash-ids" default:"hash_ids" description:"JSON key of the hash id list."`
}

var timedTraceDataset = &Dataset{
	Name:      "timed_trace",
	SelfTimed: true,
	Stream:    sampled(SampleTimedTrace),
}
