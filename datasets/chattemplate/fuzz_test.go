package chattemplate

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzTemplate compiles and renders arbitrary template text: neither may
// panic or hang, and a render that succeeds must be deterministic. The
// seed corpus is every construct case and every model template.
func FuzzTemplate(f *testing.F) {
	for _, c := range readOrderedF(f, "testdata/constructs.json").([]any) {
		f.Add(str(c.(*dict), "template"), "hello")
	}
	models, err := os.ReadDir("testdata/models")
	if err != nil {
		f.Fatal(err)
	}
	for _, m := range models {
		tmpl, err := Load(filepath.Join("testdata/models", m.Name()))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(tmpl.source, "  {{ x }} {% if %} <think>a</think>\n")
	}
	f.Fuzz(func(t *testing.T, source, prompt string) {
		tmpl, err := Parse("fuzz", source, map[string]any{"bos_token": "<s>", "eos_token": "</s>"})
		if err != nil {
			return
		}
		tmpl.now = func() time.Time { return fixedNow }
		first, err := tmpl.UserTurn(prompt, map[string]any{"enable_thinking": false})
		if err != nil {
			return
		}
		second, err := tmpl.UserTurn(prompt, map[string]any{"enable_thinking": false})
		if err != nil || second != first {
			t.Fatalf("second render differs: %q / %v, first %q", second, err, first)
		}
	})
}

func readOrderedF(f *testing.F, path string) any {
	data, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	v, err := decodeOrdered(data)
	if err != nil {
		f.Fatal(err)
	}
	return v
}
