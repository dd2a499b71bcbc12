package backend

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/datasets/pyrand"
)

// FuzzBuildRequestBody checks that any prompt gives a body that is valid
// JSON carrying the prompt unchanged, and that any extra body Python's
// json.loads accepts gives pure-ASCII bytes (ensure_ascii). Extra bodies
// may hold NaN/Infinity, which Python sends and Go's decoder rejects, so
// the JSON check runs on the body without them.
func FuzzBuildRequestBody(f *testing.F) {
	f.Add("hello", `{"temperature": 0.5}`)
	f.Add("h\u00e9llo \"q\"\n\x7f\U0001F600\x00", `{"stop": ["\n"], "n": 1e400}`)
	f.Add("\xff\xfe broken utf-8", `{"nested": {"a": [1, -0, NaN, -Infinity]}}`)
	f.Add("", `[]`)
	f.Fuzz(func(t *testing.T, prompt, extra string) {
		req := &datasets.Request{Prompt: prompt, ExpectedOutputLen: 3}
		body, err := BuildRequestBody("openai", req, BodyParams{Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		var decoded map[string]any
		if err := json.Unmarshal(body, &decoded); err != nil {
			t.Fatalf("body is not JSON: %v\n%s", err, body)
		}
		if utf8.ValidString(prompt) && decoded["prompt"] != prompt {
			t.Fatalf("prompt %q came back as %q", prompt, decoded["prompt"])
		}
		obj, ok := plan.JSONText(extra).Object()
		if !ok {
			return
		}
		body, err = BuildRequestBody("openai", req, BodyParams{Model: "m", ExtraBody: obj})
		if err != nil {
			t.Fatalf("extra body %q: %v", extra, err)
		}
		for _, c := range body {
			if c >= 0x80 {
				t.Fatalf("non-ASCII byte %#x in %q", c, body)
			}
		}
	})
}

func TestLoRAAdapters(t *testing.T) {
	mods := []string{"a", "b", "c"}
	rr, err := LoRAAdapters(mods, "round-robin", 5, nil)
	if err != nil || len(rr) != 5 || rr[3] != "a" || rr[4] != "b" {
		t.Errorf("round-robin = %v, %v", rr, err)
	}
	got, err := LoRAAdapters(mods, "random", 4, pyrand.NewRandom(0))
	if err != nil {
		t.Fatal(err)
	}
	r := pyrand.NewRandom(0)
	for i, name := range got {
		if want := mods[r.Choice(3)]; name != want {
			t.Errorf("random adapter %d = %s, want %s", i, name, want)
		}
	}
	if none, err := LoRAAdapters(nil, "random", 4, nil); none != nil || err != nil {
		t.Errorf("no modules = %v, %v", none, err)
	}
	if _, err := LoRAAdapters(mods, "sticky", 1, nil); err == nil {
		t.Error("unknown assignment accepted")
	}
}
