package chattemplate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The golden files are written by testdata/gen_golden.py, which renders
// the same inputs with jinja2 set up as transformers sets it up. Rerun it
// after changing the cases there or the conversations in
// testdata/conversations.json.

// fixedNow is gen_golden.py's FIXED_NOW.
var fixedNow = time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.Local)

// decodeOrdered decodes JSON into template values, keeping object key
// order as Python's json module does.
func decodeOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '[':
			list := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := dec.Token()
			return list, err
		case '{':
			d := newDict(4)
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				d.Set(k.(string), v)
			}
			_, err := dec.Token()
			return d, err
		}
		return nil, fmt.Errorf("unexpected delimiter %v", tok)
	case json.Number:
		return fromGo(tok), nil
	}
	return tok, nil
}

func readOrdered(t *testing.T, path string) any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := decodeOrdered(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

func str(d *dict, key string) string {
	v, _ := dictGet(d, key)
	s, _ := v.(string)
	return s
}

// expectOutcome compares a render with a golden case: the same bytes, or
// an error where jinja2 raised one.
func expectOutcome(t *testing.T, golden *dict, got string, err error) {
	t.Helper()
	if want, ok := dictGet(golden, "error"); ok {
		if err == nil {
			t.Fatalf("rendered %q, jinja2 failed with %s\ntemplate: %q", got, want, str(golden, "template"))
		}
		return
	}
	if err != nil {
		t.Fatalf("render failed: %v\njinja2 output: %q\ntemplate: %q", err, str(golden, "output"), str(golden, "template"))
	}
	if want := str(golden, "output"); got != want {
		t.Fatalf("output differs from jinja2\n got: %q\nwant: %q\ntemplate: %q", got, want, str(golden, "template"))
	}
}

func TestGoldenModels(t *testing.T) {
	conversations := map[string]*dict{}
	for _, c := range readOrdered(t, "testdata/conversations.json").([]any) {
		conversations[str(c.(*dict), "name")] = c.(*dict)
	}
	templates := map[string]*Template{}
	for _, c := range readOrdered(t, "testdata/golden.json").([]any) {
		golden := c.(*dict)
		model, conv := str(golden, "model"), str(golden, "conversation")
		agp, _ := dictGet(golden, "add_generation_prompt")
		t.Run(fmt.Sprintf("%s/%s/agp=%v", model, conv, agp), func(t *testing.T) {
			tmpl, ok := templates[model]
			if !ok {
				var err error
				if tmpl, err = Load(filepath.Join("testdata", "models", model)); err != nil {
					t.Fatal(err)
				}
				tmpl.now = func() time.Time { return fixedNow }
				templates[model] = tmpl
			}
			c, ok := conversations[conv]
			if !ok {
				t.Fatalf("conversation %q not in conversations.json", conv)
			}
			msgs, _ := dictGet(c, "messages")
			kwargs := map[string]any{}
			if kw, ok := dictGet(c, "kwargs"); ok {
				d := kw.(*dict)
				for k, v := range d.All() {
					kwargs[k.(string)] = v
				}
			}
			got, err := tmpl.render(msgs.([]any), agp.(bool), kwargs)
			expectOutcome(t, golden, got, err)
		})
	}
}

// renderSource compiles source and renders it with vars (a JSON object
// of render variables) on the golden files' fixed clock.
func renderSource(source string, vars *dict) (string, error) {
	tmpl, err := Parse("", source, nil)
	if err != nil {
		return "", err
	}
	tmpl.now = func() time.Time { return fixedNow }
	m := make(map[string]any, vars.Len())
	for k, v := range vars.All() {
		m[k.(string)] = v
	}
	return tmpl.execute(m)
}

func TestGoldenConstructs(t *testing.T) {
	for _, c := range readOrdered(t, "testdata/constructs.json").([]any) {
		golden := c.(*dict)
		t.Run(str(golden, "name"), func(t *testing.T) {
			vars, _ := dictGet(golden, "vars")
			got, err := renderSource(str(golden, "template"), vars.(*dict))
			expectOutcome(t, golden, got, err)
		})
	}
}

// TestGoldenRandom replays randomly built templates (see RandomTemplates
// in gen_golden.py) that mix every operator, filter, test, method and
// whitespace-control variant.
func TestGoldenRandom(t *testing.T) {
	file := readOrdered(t, "testdata/random.json").(*dict)
	vars, _ := dictGet(file, "vars")
	cases, _ := dictGet(file, "cases")
	for i, c := range cases.([]any) {
		golden := c.(*dict)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			got, err := renderSource(str(golden, "template"), vars.(*dict))
			expectOutcome(t, golden, got, err)
		})
	}
}
