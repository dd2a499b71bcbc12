package hfhub

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

// readList reads every item of in as raw JSON through a JSONList with
// the given limit, fed a byte at a time when slow.
func readList(in string, limit int64, slow bool) ([]string, error) {
	var r io.Reader = strings.NewReader(in)
	if slow {
		r = iotest.OneByteReader(r)
	}
	l, err := NewJSONList(r, limit)
	if err != nil {
		return nil, err
	}
	var items []string
	for {
		var raw json.RawMessage
		more, err := l.Next(func(dec *json.Decoder) error { return dec.Decode(&raw) })
		if err != nil || !more {
			return items, err
		}
		items = append(items, string(raw))
	}
}

// TestJSONListLimit: items within the limit (counted from the comma
// before them) are read whole, wherever the reads cut the file; the first
// longer item fails with its index and the limit, whatever its kind and
// however much the decoder read ahead.
func TestJSONListLimit(t *testing.T) {
	const limit = 32
	long := `"` + strings.Repeat("x", 40) + `"`
	tests := []struct {
		name  string
		in    string
		items int
		large int // the index of the item too large; -1 for none
	}{
		{"within", `[{"a": 1}, "` + strings.Repeat("y", limit-4) + `", 3]`, 3, -1},
		{"one past", `[{"a": 1}, "` + strings.Repeat("y", limit-2) + `", 3]`, 1, 1},
		{"a long string second", `[{"a": 1}, ` + long + `, 3]`, 1, 1},
		{"a long object first", `[{"a": ` + long + `}]`, 0, 0},
		{"a long list last", `[1, 2, [` + strings.Repeat("1,", 30) + `1]]`, 2, 2},
		{"spaces before a comma are no item's", "[1" + strings.Repeat(" ", 10*limit) + ",2]", 2, -1},
		{"empty", " [ ] ", 0, -1},
	}
	for _, tt := range tests {
		for _, slow := range []bool{false, true} {
			items, err := readList(tt.in, limit, slow)
			var big *ItemTooLargeError
			switch {
			case tt.large < 0 && err != nil:
				t.Errorf("%s (slow %v): %v", tt.name, slow, err)
			case tt.large >= 0 && (!errors.As(err, &big) || big.Index != tt.large || big.Limit != limit):
				t.Errorf("%s (slow %v): error %v, want item %d too large", tt.name, slow, err, tt.large)
			}
			if len(items) != tt.items {
				t.Errorf("%s (slow %v): %d items %q, want %d", tt.name, slow, len(items), items, tt.items)
			}
		}
	}
}

// TestJSONListRefuses: a value that is not a list is named by its kind,
// a cut-off list ends early, and JSON after the list is refused.
func TestJSONListRefuses(t *testing.T) {
	for _, c := range []struct{ in, kind string }{{`{"a": 1}`, "object"}, {` "x"`, "string"}, {"5", "number"}, {"true", "bool"}, {"null", "null"}} {
		_, err := NewJSONList(strings.NewReader(c.in), 100)
		var notList *NotAListError
		if !errors.As(err, &notList) || notList.Kind != c.kind {
			t.Errorf("%s: %v, want a JSON %s, not a list", c.in, err, c.kind)
		}
	}
	if _, err := readList(`[{"a": `, 100, false); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a cut-off item: %v", err)
	}
	if _, err := readList(`[1, 2`, 100, false); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a list without its ']': %v", err)
	}
	if _, err := readList(`[1] [2]`, 100, false); err == nil || !strings.Contains(err.Error(), "after the list") {
		t.Errorf("JSON after the list: %v", err)
	}
}

// TestOpenJSONStreams: a .json list's rows come one at a time with
// their keys in order, and an item longer than maxLine is an error
// naming the file and the item, not a read of the whole of it.
func TestOpenJSONStreams(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "rows.json")
	if err := os.WriteFile(p, []byte(`[{"b": 1, "a": "x"}, {"b": 2}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := openFile(p)
	if err != nil {
		t.Fatal(err)
	}
	o, err := src.next()
	if err != nil || strings.Join(o.Keys, ",") != "b,a" || o.Fields["b"] != int64(1) {
		t.Fatalf("first row %+v, %v", o, err)
	}
	if o, err = src.next(); err != nil || o.Fields["b"] != int64(2) {
		t.Fatalf("second row %+v, %v", o, err)
	}
	if _, err = src.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last row: %v", err)
	}
	src.close()

	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`[{"a": 1}, {"image": "`)
	chunk := strings.Repeat("A", 1<<20)
	for range maxLine>>20 + 1 {
		f.WriteString(chunk)
	}
	f.WriteString(`"}]`)
	f.Close()
	if src, err = openFile(big); err != nil {
		t.Fatal(err)
	}
	defer src.close()
	if _, err := src.next(); err != nil {
		t.Fatal(err)
	}
	_, err = src.next()
	if err == nil || !strings.Contains(err.Error(), big+": item 1 (from 0) is longer than 64 MiB") {
		t.Errorf("an item past the bound: %v", err)
	}
}
