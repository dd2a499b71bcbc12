package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/datasets/pyrand"
	"github.com/stampede-bench/stampede/internal/py"
)

// CPython 3.11 (SipHash-1-3) values of hash(s), printed by
// `PYTHONHASHSEED=<seed> python3 -c 'print(hash(s))'`.
func TestPyStrHashMatchesCPython(t *testing.T) {
	cases := []struct {
		seed uint32
		s    string
		want int64
	}{
		{0, "", 0},
		{0, "a", 4644417185603328019},
		{0, "0:16", 2911543553534064838},
		{0, "12345:16", 4830674740868665574},
		{0, "98765432:7", -3855864322244041632},
		{0, "abcdefgh", 4574395652268504554},
		{0, "abcdefghi", -532774252720507163},
		{0, "héllo:16", -2793472269924837218},
		{0, "日本:3", -4960297354361106921},
		{0, "🙂x:1", -6784575336992367949},
		{1, "a", -3012895188637184397},
		{1, "0:16", -8582388542914680901},
		{1, "héllo:16", -8194058412674500316},
		{42, "12345:16", 4803634252586316808},
		{42, "日本:3", -4018598493649100581},
		{42, "🙂x:1", 6831278885196789091},
		{4294967295, "abcdefghi", 6340115119033867570},
		{4294967295, "1.5:16", 3226296100541372758},
	}
	for _, c := range cases {
		h, err := newPyStrHash(&c.seed, HashSipHash13)
		if err != nil {
			t.Fatal(err)
		}
		if got := h.sum(c.s); got != c.want {
			t.Errorf("PYTHONHASHSEED=%d hash(%q) = %d, want %d", c.seed, c.s, got, c.want)
		}
	}
}

// SipHash-2-4's reference vector (Aumasson & Bernstein, appendix A): key
// 00..0f, message 00..0e.
func TestSipHash24ReferenceVector(t *testing.T) {
	h := pyStrHash{k0: 0x0706050403020100, k1: 0x0f0e0d0c0b0a0908, cRounds: 2, final: 4}
	msg := make([]byte, 15)
	for i := range msg {
		msg[i] = byte(i)
	}
	if got, want := h.sipHash(msg), uint64(0xa129ca6149be45e5); got != want {
		t.Fatalf("siphash24 = %#x, want %#x", got, want)
	}
}

func TestParsePythonHashSeed(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    int64 // -1: nil
		wantErr bool
	}{
		{"", -1, false}, {"random", -1, false}, {"0", 0, false}, {"4294967295", 4294967295, false},
		{"4294967296", 0, true}, {"-1", 0, true}, {"abc", 0, true},
	} {
		got, err := ParsePythonHashSeed(c.in)
		if (err != nil) != c.wantErr {
			t.Errorf("ParsePythonHashSeed(%q) error = %v", c.in, err)
			continue
		}
		if c.wantErr {
			continue
		}
		if (got == nil) != (c.want == -1) || (got != nil && int64(*got) != c.want) {
			t.Errorf("ParsePythonHashSeed(%q) = %v, want %d", c.in, got, c.want)
		}
	}
}

type timedTraceGolden struct {
	RequestID    string  `json:"request_id"`
	PromptIDs    []int32 `json:"prompt_ids"`
	OutputLen    int     `json:"output_len"`
	TimestampSec float64 `json:"timestamp_sec"`
}

// The golden files come from testdata/timed_trace/golden.py, which runs
// the same expansion with CPython's hash() and random.
func TestSampleTimedTraceMatchesPython(t *testing.T) {
	for _, seed := range []uint32{0, 42} {
		t.Run(fmt.Sprint("PYTHONHASHSEED=", seed), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", "timed_trace", fmt.Sprintf("golden_%d.json", seed)))
			if err != nil {
				t.Fatal(err)
			}
			var want []timedTraceGolden
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			o := timedTraceEnv()
			o.Path = filepath.Join("testdata", "timed_trace", "trace.jsonl")
			o.Flags.TimedTraceSecMultiplier = 0.001
			o.RequestIDPrefix = "p-"
			t.Setenv("PYTHONHASHSEED", fmt.Sprint(seed))
			reqs, err := SampleTimedTrace(o)
			if err != nil {
				t.Fatal(err)
			}
			if len(reqs) != len(want) {
				t.Fatalf("%d requests, want %d", len(reqs), len(want))
			}
			for i, w := range want {
				r := reqs[i]
				if len(w.PromptIDs) == 0 {
					w.PromptIDs = nil
				}
				if len(r.PromptIDs) == 0 {
					r.PromptIDs = nil
				}
				got := timedTraceGolden{r.RequestID, r.PromptIDs, r.ExpectedOutputLen, r.TimestampSec}
				if !reflect.DeepEqual(got, w) {
					t.Errorf("request %d:\n got %+v\nwant %+v", i, got, w)
				}
				if r.PromptLen != len(r.PromptIDs) || r.Prompt != "" {
					t.Errorf("request %d: PromptLen %d for %d ids, Prompt %q", i, r.PromptLen, len(r.PromptIDs), r.Prompt)
				}
			}
		})
	}
}

func TestSampleTimedTraceFirstNLinesAndGlobals(t *testing.T) {
	seed := uint32(0)
	g, _ := NewPythonGlobals(7)
	g.Random.Random()
	o := timedTraceEnv()
	o.Path = filepath.Join("testdata", "timed_trace", "trace.jsonl")
	o.NumPrompts = 2
	o.Globals = g
	var logged []string
	o.Logf = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	reqs, err := sampleTimedTrace(o, &seed, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 2 || reqs[1].RequestID != "1" || reqs[1].TimestampSec != 1500 {
		t.Fatalf("got %+v", reqs)
	}
	if want := pyrand.NewRandom(0).Random(); g.Random.Random() != want {
		t.Error("Python's random was not reseeded with 0")
	}
	if want := pyrand.NewRandomState(0).RandomSample(); g.NumPy.RandomSample() != want {
		t.Error("numpy's global generator was not reseeded with 0")
	}
	wantLog := `timed-trace: chunk_size: 16, sec_multiplier: 1.0, label_ts: "timestamp", label_input_length: "input_length", label_output_length: "output_length", label_hash_ids: "hash_ids"`
	if len(logged) != 1 || logged[0] != wantLog {
		t.Errorf("logged %q, want %q", logged, wantLog)
	}
}

func TestSampleTimedTraceRenamedLabelsAndUnsetHashSeed(t *testing.T) {
	path := writeFile(t, "trace.jsonl", `{"ts": 2, "in": 20, "out": 5, "h": [9, 8]}`+"\n")
	o := timedTraceEnv()
	o.Path = path
	o.Flags.TimedTraceLabelTimestamp, o.Flags.TimedTraceLabelInputLength, o.Flags.TimedTraceLabelOutputLength, o.Flags.TimedTraceLabelHashIDs = "ts", "in", "out", "h"
	o.Flags.TimedTraceSecMultiplier = 0.5
	reqs, err := sampleTimedTrace(o, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 1 || len(reqs[0].PromptIDs) != 20 || reqs[0].ExpectedOutputLen != 5 || reqs[0].TimestampSec != 1 {
		t.Fatalf("got %+v", reqs)
	}
	for _, id := range reqs[0].PromptIDs {
		if id < 1 || id > 296 {
			t.Fatalf("id %d is special or outside the vocabulary", id)
		}
	}
}

func TestSampleTimedTraceErrors(t *testing.T) {
	cases := []struct {
		name, line, want string
		python           bool
	}{
		{"no input length", `{"timestamp": 1, "output_length": 2, "hash_ids": []}`,
			"Input length field 'input_length' not found in trace entry. Available fields: ['timestamp', 'output_length', 'hash_ids']. Use --label-input-length to specify the correct field name.", true},
		{"null output length", `{"timestamp": 1, "input_length": 2, "output_length": null}`,
			"Output length field 'output_length' not found in trace entry. Available fields: ['timestamp', 'input_length', 'output_length']. Use --label-output-length to specify the correct field name.", true},
		{"no timestamp", `{"input_length": 2, "output_length": 3, "it's": 1}`,
			`Timestamp field 'timestamp' not found in trace entry. Available fields: ['input_length', 'output_length', "it's"]. Use --label-timestamp to specify the correct field name.`, true},
		{"bad timestamp string", `{"timestamp": "soon", "input_length": 2, "output_length": 3}`,
			"could not convert string to float: 'soon'", true},
		{"float length", `{"timestamp": 1, "input_length": 2.5, "output_length": 3}`, `line 1: field "input_length" must be an integer, got 2.5`, false},
		{"hash ids not a list", `{"timestamp": 1, "input_length": 2, "output_length": 3, "hash_ids": 7}`, `line 1: "hash_ids" must be a list of hash ids, got 7`, false},
		{"not an object", `[1, 2]`, `line 1: want a JSON object`, false},
		{"blank line", "\n", `line 1: want a JSON object`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := timedTraceEnv()
			o.Path = writeFile(t, "trace.jsonl", c.line+"\n")
			_, err := SampleTimedTrace(o)
			if err == nil {
				t.Fatal("no error")
			}
			var pyErr *py.Error
			if got := errors.As(err, &pyErr); got != c.python {
				t.Errorf("py.Error = %v, want %v (%v)", got, c.python, err)
			}
			// Python's message, then what it leaves out: the flag's real
			// name, the file and line.
			place := " (" + o.Path + " line 1)"
			if c.python && !strings.HasPrefix(err.Error(), c.want) || c.python && !strings.HasSuffix(err.Error(), place) ||
				!c.python && !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want %q", err, c.want)
			}
		})
	}
	if _, err := SampleTimedTrace(&Env{Tokenizer: newBPETokenizer(), Flags: &Flags{}}); err == nil || err.Error() != "dataset_path must be provided for loading data." {
		t.Errorf("no path: %v", err)
	}
	if _, err := SampleTimedTrace(&Env{Flags: timedTraceEnv().Flags}); err == nil {
		t.Error("no tokenizer: no error")
	}
	if _, err := sampleTimedTrace(timedTraceEnv(), nil, "fnv"); err == nil || !strings.Contains(err.Error(), "siphash13") {
		t.Errorf("bad algorithm: %v", err)
	}
	t.Setenv("PYTHONHASHSEED", "soon")
	if _, err := SampleTimedTrace(timedTraceEnv()); err == nil || !strings.Contains(err.Error(), "PYTHONHASHSEED") {
		t.Errorf("bad PYTHONHASHSEED: %v", err)
	}
}

func TestNonSpecialVocab(t *testing.T) {
	got := nonSpecialVocab(listedVocab{newBPETokenizer(), []int32{5, 3, 297, 0, 3, 400}})
	if want := []int32{3, 5, 400}; !reflect.DeepEqual(got, want) {
		t.Errorf("listed vocabulary: %v, want %v", got, want)
	}
	got = nonSpecialVocab(lookupVocab{newBPETokenizer(), map[int32]bool{1: true, 2: true, 297: true, 298: true, 299: true, 301: true}})
	if want := []int32{1, 2, 298, 299}; !reflect.DeepEqual(got, want) {
		t.Errorf("looked-up vocabulary: %v, want %v", got, want)
	}
}

type listedVocab struct {
	*bpeTokenizer
	ids []int32
}

func (v listedVocab) VocabIDs() []int32 { return append([]int32(nil), v.ids...) }

type lookupVocab struct {
	*bpeTokenizer
	known map[int32]bool
}

func (v lookupVocab) IDToToken(id int32) (string, bool) { return "", v.known[id] }

// FuzzParseTraceEntry: any line is rejected or read as an object whose
// keys are unique, all have a value, and whose values are valid JSON.
func FuzzParseTraceEntry(f *testing.F) {
	for _, s := range []string{
		`{"timestamp": 1, "input_length": 2, "output_length": 3, "hash_ids": [1, "a", 2.5, true, null]}`,
		`{"a": 1, "a": 2}`, `{}`, `[1]`, `{"a": }`, `{"a": 1} {"b": 2}`, `{1: 2}`, ``, `"x"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		e, err := parseTraceEntry([]byte(line))
		if err != nil {
			return
		}
		if len(e.keys) != len(e.values) {
			t.Fatalf("%q: keys %q, %d values", line, e.keys, len(e.values))
		}
		for _, k := range e.keys {
			v, ok := e.values[k]
			if !ok || !json.Valid(v) {
				t.Fatalf("%q: key %q has value %q", line, k, v)
			}
			if _, err := pyStrOfJSON(v); err != nil && (v[0] != '[' && v[0] != '{') {
				t.Fatalf("%q: scalar %s has no str(): %v", line, v, err)
			}
		}
	})
}

// timedTraceEnv is an Env for timed_trace with the flags' defaults.
func timedTraceEnv() *Env {
	return &Env{Tokenizer: newBPETokenizer(), NumPrompts: 1000, Flags: &Flags{TimedTraceFlags: TimedTraceFlags{
		TimedTraceChunkHashSize:     16,
		TimedTraceSecMultiplier:     1,
		TimedTraceLabelTimestamp:    "timestamp",
		TimedTraceLabelInputLength:  "input_length",
		TimedTraceLabelOutputLength: "output_length",
		TimedTraceLabelHashIDs:      "hash_ids",
	}}}
}
