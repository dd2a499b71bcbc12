package hfhub

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The dataset card, JSON rows and Parquet files come from the network.

func FuzzCardConfigs(f *testing.F) {
	f.Add("---\nconfigs:\n- config_name: a\n  data_files:\n  - split: train\n    path: data/*\n---\n")
	f.Add("---\nconfigs:\n- data_files: x.parquet\n  default: true\n---")
	f.Add("---\na:\n- - b\n  -\n    c: [d, 'e'\n---\n")
	f.Fuzz(func(t *testing.T, card string) {
		for _, c := range cardConfigs(card) {
			for _, s := range c.splits {
				_ = matchAll([]string{"data/a.parquet", "x.parquet"}, s.patterns)
			}
		}
	})
}

func FuzzDecodeJSON(f *testing.F) {
	f.Add([]byte(`{"a": [1, 2.5, "x", null, {"b": true}]}`))
	f.Add([]byte(`[1e400, -0, "\u00e9"]`))
	f.Add([]byte(`{"a": 1} {"b": 2}`))
	f.Add([]byte(strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeJSON(b)
		// A list read an item at a time holds the items DecodeJSON finds.
		list, isList := v.([]any)
		l, lerr := NewJSONList(bytes.NewReader(b), 1<<20)
		n := 0
		for lerr == nil {
			var more bool
			more, lerr = l.Next(func(dec *json.Decoder) error { _, err := decodeValue(dec, 1); return err })
			if !more {
				break
			}
			n++
		}
		if err == nil && isList && (lerr != nil || n != len(list)) {
			t.Fatalf("JSONList read %d items (%v) of a list of %d", n, lerr, len(list))
		}
		if err != nil && lerr == nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")) {
			t.Fatalf("JSONList read %d items of JSON DecodeJSON refuses (%v)", n, err)
		}
	})
}

func FuzzParquetRows(f *testing.F) {
	dir := f.TempDir()
	seed := filepath.Join(dir, "seed.parquet")
	writeIDsTo(f, seed)
	b, err := os.ReadFile(seed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)/2])
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "f.parquet")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		src, err := openParquet(p)
		if err != nil {
			return
		}
		defer src.close()
		for range 1000 {
			if _, err := src.next(); err != nil {
				if !errors.Is(err, io.EOF) && err.Error() == "" {
					t.Fatal("empty error")
				}
				return
			}
		}
	})
}

// A line of nested brackets is refused at maxJSONDepth, before the
// recursion outgrows the stack; one level less is a value.
func TestDecodeJSONDepth(t *testing.T) {
	nest := func(n int) []byte {
		return []byte(strings.Repeat(`{"a":[`, n/2) + "1" + strings.Repeat("]}", n/2))
	}
	if _, err := DecodeJSON(nest(maxJSONDepth)); err != nil {
		t.Fatalf("%d levels: %v", maxJSONDepth, err)
	}
	_, err := DecodeJSON(nest(4 * maxJSONDepth))
	if err == nil || !strings.Contains(err.Error(), "nested deeper than 10000 levels") {
		t.Fatalf("%d levels: %v", 4*maxJSONDepth, err)
	}
}
