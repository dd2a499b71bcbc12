package datasets

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/internal/py"
)

// Expected rows come from numpy/pandas documentation and well-known
// outputs: the pandas DataFrame.sample docstring (4 rows, random_state=1:
// n=3 gives rows 3, 2, 0; frac=0.5 with replacement gives rows 1, 3) and
// numpy.random.seed(0); numpy.random.permutation(10).
func TestPandasSampleRows(t *testing.T) {
	cases := []struct {
		rows, n int
		replace bool
		seed    int64
		want    []int
	}{
		{4, 3, false, 1, []int{3, 2, 0}},
		{4, 2, true, 1, []int{1, 3}},
		{10, 10, false, 0, []int{2, 8, 4, 9, 1, 6, 7, 3, 0, 5}},
		{5, 0, false, 0, []int{}},
		{0, 0, true, 0, []int{}},
	}
	for _, c := range cases {
		got, err := pandasSampleRows(c.rows, c.n, c.replace, c.seed)
		if err != nil {
			t.Errorf("%+v: %v", c, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("sample(n=%d of %d, replace=%v, random_state=%d) = %v, want %v", c.n, c.rows, c.replace, c.seed, got, c.want)
		}
	}
	for _, c := range []struct {
		rows, n int
		replace bool
		seed    int64
		want    string
	}{
		{4, -1, false, 0, "A negative number of rows requested. Please provide `n` >= 0."},
		{4, 1, false, -3, "Seed must be between 0 and 2**32 - 1"},
		{4, 1, false, 1 << 32, "Seed must be between 0 and 2**32 - 1"},
		{0, 2, true, 0, "a cannot be empty unless no samples are taken"},
		{3, 4, false, 0, "Cannot take a larger sample than population when 'replace=False'"},
	} {
		if _, err := pandasSampleRows(c.rows, c.n, c.replace, c.seed); err == nil || err.Error() != c.want {
			t.Errorf("%+v: error %v, want %q", c, err, c.want)
		}
	}
}

func TestSampleBurstGPT(t *testing.T) {
	tok := newBPETokenizer()
	path := filepath.Join("testdata", "burstgpt", "burstgpt.csv")
	// Kept rows, in file order: (12, 7), (30, 25), (5, 3), (20, 11); the
	// ChatGPT rows, the zero-response row and "GPT-4 " are dropped.
	kept := [][2]int{{12, 7}, {30, 25}, {5, 3}, {20, 11}}
	cases := []struct {
		n    int
		seed int64
		rows []int // positions among the kept rows
	}{
		{3, 1, []int{3, 2, 0}},    // without replacement: permutation(4)[:3]
		{4, 1, []int{3, 2, 0, 1}}, // n == rows: still without replacement
		{6, 0, nil},               // with replacement: randint(0, 4, 6)
	}
	for _, c := range cases {
		reqs, err := SampleBurstGPT(&Env{Tokenizer: tok, Path: path, NumPrompts: c.n, Seed: c.seed, RequestIDPrefix: "b-", Flags: &Flags{}})
		if err != nil {
			t.Fatal(err)
		}
		if len(reqs) != c.n {
			t.Fatalf("n=%d: %d requests", c.n, len(reqs))
		}
		rows := c.rows
		if rows == nil {
			rows, _ = pandasSampleRows(len(kept), c.n, true, c.seed)
		}
		for i, r := range reqs {
			want := kept[rows[i]]
			if r.PromptLen != want[0] || r.ExpectedOutputLen != want[1] || r.RequestID != "b-"+itoa(i) {
				t.Errorf("n=%d request %d: len %d/%d id %q, want row %v", c.n, i, r.PromptLen, r.ExpectedOutputLen, r.RequestID, want)
			}
			ids := make([]int32, want[0])
			for j := range ids {
				ids[j] = int32((i + j) % tok.VocabSize())
			}
			if wantPrompt := tok.Decode(ids, false); r.Prompt != wantPrompt {
				t.Errorf("n=%d request %d: prompt %q, want %q", c.n, i, r.Prompt, wantPrompt)
			}
		}
	}
}

func TestSampleBurstGPTErrors(t *testing.T) {
	tok := newBPETokenizer()
	cases := []struct {
		name, csv string
		n         int
		pyType    string
		want      string
	}{
		{"no Model column", "Timestamp,Engine,Request tokens,Response tokens\n1,GPT-4,2,3\n", 1, "KeyError", "'Model'"},
		{"no Response tokens column", "Timestamp,Model,Request tokens,Output\n1,GPT-4,2,3\n", 1, "KeyError", "'Response tokens'"},
		{"empty file", "", 1, "EmptyDataError", "No columns to parse from file"},
		{"NaN request tokens", "Timestamp,Model,Request tokens,Response tokens\n1,GPT-4,,3\n", 1, "ValueError", "cannot convert float NaN to integer"},
		{"three columns", "Model,Response tokens,X\nGPT-4,3,1\n", 1, "IndexError", "list index out of range"},
		{"no GPT-4 rows", "Timestamp,Model,Request tokens,Response tokens\n1,ChatGPT,2,3\n", 2, "ValueError", "a cannot be empty unless no samples are taken"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := SampleBurstGPT(&Env{Tokenizer: tok, Path: writeFile(t, "b.csv", c.csv), NumPrompts: c.n, Flags: &Flags{}})
			var pyErr *py.Error
			// Python's message, then perhaps what it leaves out in parentheses.
			if !errors.As(err, &pyErr) || pyErr.Type != c.pyType || (pyErr.Msg != c.want && !strings.HasPrefix(pyErr.Msg, c.want+" (")) {
				t.Errorf("error %v, want %s: %s", err, c.pyType, c.want)
			}
		})
	}
	_, err := SampleBurstGPT(&Env{Tokenizer: tok, Path: writeFile(t, "b.csv", "Timestamp,Model,Request tokens,Response tokens\n1,GPT-4,2,many\n"), NumPrompts: 1, Flags: &Flags{}})
	if err == nil || !strings.Contains(err.Error(), "'>' not supported") {
		t.Errorf("text response tokens: %v", err)
	}
	if _, err := SampleBurstGPT(&Env{Tokenizer: tok, Flags: &Flags{}}); err == nil || err.Error() != "dataset_path must be provided for loading data." {
		t.Errorf("no path: %v", err)
	}
	// Three columns are enough when nothing is drawn, as in Python.
	if reqs, err := SampleBurstGPT(&Env{Tokenizer: tok, Path: writeFile(t, "b.csv", "Model,Response tokens,X\nGPT-4,3,1\n"), Flags: &Flags{}}); err != nil || len(reqs) != 0 {
		t.Errorf("n=0: %v %v", reqs, err)
	}
}
