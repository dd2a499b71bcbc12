package datasets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShareGPTEntryBound: an entry longer than MaxShareGPTEntryBytes is
// an error naming the file, the entry and the bound, read no further than
// the bound (about); the entries before it and one just within it are
// read.
func TestShareGPTEntryBound(t *testing.T) {
	tok := newBPETokenizer()
	entry := func(value string) string {
		return `{"conversations": [{"from": "human", "value": "` + value + `"}, {"from": "gpt", "value": "an answer of several words"}]}`
	}
	small := entry("a prompt of several words")
	// The bound counts the entry from the comma before it.
	within := entry(strings.Repeat("w", MaxShareGPTEntryBytes-len(entry(""))-2))
	path := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(path, []byte("["+small+", "+within+"]"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := &Env{Tokenizer: tok, Path: path, NumPrompts: 1, Flags: &Flags{}, DisableShuffle: true}
	if reqs, err := SampleShareGPT(env); err != nil || len(reqs) != 1 {
		t.Fatalf("an entry at the bound: %d requests, %v", len(reqs), err)
	}

	over := entry(strings.Repeat("o", MaxShareGPTEntryBytes))
	if err := os.WriteFile(path, []byte("["+small+", "+small+", "+over+", "+small+"]"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := SampleShareGPT(env)
	want := "dataset sharegpt " + path + ": entry 2 (from 0) is longer than 16 MiB, the most stampede reads as one conversation"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("an entry past the bound: %v, want %q", err, want)
	}
}

// TestShareGPTStreamErrors: read an entry at a time, a file still says
// what is wrong with it: a value that is not a list, broken JSON at an
// entry, JSON after the list, and a list that is cut off.
func TestShareGPTStreamErrors(t *testing.T) {
	tok := newBPETokenizer()
	for _, c := range []struct{ data, want string }{
		{`"just text"`, `found a string; want ` + shareGPTShape},
		{"\n\n  xonsense", "not valid JSON at line 3, column 3: character 'x' looking for beginning of value; want " + shareGPTShape},
		{`[{"conversations": []}, {"conversations": [} ]`, "not valid JSON at entry 1 (from 0): character '}' looking for beginning of value; want " + shareGPTShape},
		{`[{"conversations": []}] [1]`, "not valid JSON at entry 0 (from 0): more JSON after the list's closing ']'; want " + shareGPTShape},
		{`[{"conversations": []}, {"conversations": [{"value": "a`, "the JSON ends early (an unclosed bracket, brace or string?); want " + shareGPTShape},
	} {
		path := writeFile(t, "s.json", c.data)
		_, err := SampleShareGPT(&Env{Tokenizer: tok, Path: path, NumPrompts: 1, Flags: &Flags{}})
		if want := "dataset sharegpt " + path + ": " + c.want; err == nil || err.Error() != want {
			t.Errorf("%q:\n got %v\nwant %s", c.data, err, want)
		}
	}
}
