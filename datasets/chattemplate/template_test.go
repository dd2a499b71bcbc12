package chattemplate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func mustParse(t *testing.T, source string, tokens map[string]any) *Template {
	t.Helper()
	tmpl, err := Parse("test.jinja", source, tokens)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

// TestErrorPositions checks that syntax errors (render false) and render
// errors (render true) name the file, line and column.
func TestErrorPositions(t *testing.T) {
	for _, tc := range []struct {
		name      string
		source    string
		render    bool
		line, col int
		msg       string
	}{
		{"unknown tag", "a\n  {% frobnicate %}", false, 2, 6, "unknown tag 'frobnicate'"},
		{"unclosed if", "{% if x %}\nbody", false, 1, 4, "'if' tag is never closed"},
		{"unterminated string", "x\ny {{ 'abc }}", false, 2, 6, "unterminated string literal"},
		{"missing operand", "{{ 1 + }}", false, 1, 8, "unexpected end of print statement"},
		{"unknown filter", "{{\n  x | nosuch }}", false, 2, 7, "no filter named 'nosuch'"},
		{"unknown test", "{{ x is nosuch }}", false, 1, 9, "no test named 'nosuch'"},
		{"unclosed comment", "ab{# c", false, 1, 3, "missing end of comment tag"},
		{"unexpected closer", "{{ x) }}", false, 1, 5, "unexpected ')'"},
		{"chained tests", "{{ x is defined is none }}", false, 1, 17, ""},
		{"wrong end tag", "{% for x in y %}{% endif %}", false, 1, 20, "unknown tag 'endif' (expected 'endfor')"},
		{"unsupported include", "{% include 'x' %}", false, 1, 4, "'include' tag is not supported"},
		{"non-ASCII column", "ééé {{ 'x }}", false, 1, 8, "unterminated string literal"},
		{"undefined attribute", "line1\n{{ messages[0].x.y }}", true, 2, 18, "'dict object' has no attribute 'x'"},
		{"type error", "{% if true %}\n  {{ 'a' + 1 }}{% endif %}", true, 2, 10, "can only concatenate str"},
		{"undefined name in arithmetic", "{{ nope + 1 }}", true, 1, 9, "'nope' is undefined"},
		{"filter error", "{{ nope|tojson }}", true, 1, 9, "filter tojson: object of type Undefined"},
		{"raise_exception", "{{ raise_exception('bad ' ~ messages|length) }}", true, 1, 19, "raise_exception: bad 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := Parse("tpl.jinja", tc.source, nil)
			if tc.render {
				if err != nil {
					t.Fatal(err)
				}
				_, err = tmpl.UserTurn("hi", nil)
			}
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("want *Error, got %v", err)
			}
			if te.Line != tc.line || te.Col != tc.col {
				t.Errorf("position %d:%d, want %d:%d (%v)", te.Line, te.Col, tc.line, tc.col, err)
			}
			if !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), "tpl.jinja") {
				t.Errorf("error %q should name the file and contain %q", err, tc.msg)
			}
		})
	}
}

func TestRaisedErrorCarriesMessage(t *testing.T) {
	tmpl, err := Load("testdata/models/gemma3")
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmpl.Render([]Message{{Role: "user", Content: "a"}, {Role: "user", Content: "b"}}, true, nil)
	var raised *RaisedError
	if !errors.As(err, &raised) {
		t.Fatalf("want a RaisedError, got %v", err)
	}
	if raised.Message != "Conversation roles must alternate user/assistant/user/assistant/..." {
		t.Errorf("message %q", raised.Message)
	}
}

func TestUserTurnEqualsRender(t *testing.T) {
	models, err := os.ReadDir("testdata/models")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range models {
		t.Run(m.Name(), func(t *testing.T) {
			tmpl, err := Load(filepath.Join("testdata/models", m.Name()))
			if err != nil {
				t.Fatal(err)
			}
			tmpl.now = func() time.Time { return fixedNow }
			const prompt = "Pick as many lines as you can from these poem lines:\n"
			got, err := tmpl.UserTurn(prompt, nil)
			if err != nil {
				t.Fatal(err)
			}
			want, err := tmpl.Render([]Message{{Role: "user", Content: prompt}}, true, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got != want || got == "" {
				t.Errorf("UserTurn %q, Render %q", got, want)
			}
		})
	}
}

// TestMessagesFromGo renders golden conversations given as Message
// values (Content and Extra as encoding/json produces them) and compares
// with jinja2's output for the same conversation.
func TestMessagesFromGo(t *testing.T) {
	data, err := os.ReadFile("testdata/conversations.json")
	if err != nil {
		t.Fatal(err)
	}
	var convs []struct {
		Name     string
		Messages []map[string]any
		Kwargs   map[string]any
	}
	if err := json.Unmarshal(data, &convs); err != nil {
		t.Fatal(err)
	}
	golden := map[string]*dict{}
	for _, c := range readOrdered(t, "testdata/golden.json").([]any) {
		g := c.(*dict)
		agp, _ := dictGet(g, "add_generation_prompt")
		golden[fmt.Sprintf("%s/%s/%v", str(g, "model"), str(g, "conversation"), agp)] = g
	}
	for _, model := range []string{"qwen3", "kimi_k2", "deepseek_v3", "synthetic_chatml"} {
		tmpl, err := Load(filepath.Join("testdata/models", model))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range convs {
			if c.Name == "tool call with object arguments" {
				continue // Go maps lose the key order tojson would show
			}
			t.Run(model+"/"+c.Name, func(t *testing.T) {
				msgs := make([]Message, len(c.Messages))
				for i, m := range c.Messages {
					msgs[i] = Message{Role: m["role"].(string), Content: m["content"], Extra: map[string]any{}}
					for k, v := range m {
						if k != "role" && k != "content" {
							msgs[i].Extra[k] = v
						}
					}
				}
				got, err := tmpl.Render(msgs, true, c.Kwargs)
				expectOutcome(t, golden[model+"/"+c.Name+"/true"], got, err)
			})
		}
	}
}

func TestKwargs(t *testing.T) {
	tmpl := mustParse(t, "{{ bos_token }}|{{ n + 1 }}|{{ l|join(',') }}|{{ m|tojson }}|{{ flag is true }}|{{ f }}", map[string]any{"bos_token": "<s>"})
	got, err := tmpl.UserTurn("x", map[string]any{
		"n":    3,
		"l":    []string{"a", "b"},
		"m":    map[string]any{"z": 1, "a": []any{true, nil}},
		"flag": true,
		"f":    float32(0.5),
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := `<s>|4|a,b|{"a": [true, null], "z": 1}|True|0.5`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	got, err = tmpl.UserTurn("x", map[string]any{"bos_token": "<override>", "n": 0, "l": []string{}, "m": nil, "flag": 1, "f": json.Number("2")})
	if err != nil {
		t.Fatal(err)
	}
	if want := `<override>|1||null|False|2`; got != want {
		t.Errorf("kwargs must override special tokens: got %q, want %q", got, want)
	}
	for _, name := range []string{"messages", "add_generation_prompt", "tools", "documents"} {
		if _, err := tmpl.UserTurn("x", map[string]any{name: 1}); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("kwarg %q: want an error naming it, got %v", name, err)
		}
	}
}

func TestRenderVariables(t *testing.T) {
	tmpl := mustParse(t, "{{ tools is none }} {{ documents is none }} {{ add_generation_prompt }} {{ pad_token is defined }} {{ messages|length }}", map[string]any{"eos_token": "</s>"})
	got, err := tmpl.Render([]Message{{Role: "user", Content: "a"}, {Role: "assistant", Content: nil}}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "True True False False 2"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestConcurrentRender(t *testing.T) {
	tmpl, err := Load("testdata/models/qwen3")
	if err != nil {
		t.Fatal(err)
	}
	want := make([]string, 16)
	for i := range want {
		if want[i], err = tmpl.UserTurn(fmt.Sprint("prompt ", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(want))
	for i := range want {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				got, err := tmpl.UserTurn(fmt.Sprint("prompt ", i), map[string]any{"enable_thinking": i%2 == 0})
				if err != nil {
					errs <- err
					return
				}
				if !strings.HasPrefix(got, want[i]) {
					errs <- fmt.Errorf("goroutine %d rendered %q, want prefix %q", i, got, want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestLimits(t *testing.T) {
	for _, tc := range []struct{ name, source, msg string }{
		{"huge repeat", "{{ 'x' * 100000000 }}", "string longer than"},
		{"nested loops", "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}", "loop iterations"},
		{"recursive macro", "{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", "macro calls nested deeper"},
		{"deep expression", "{{ " + strings.Repeat("(", 500) + "1" + strings.Repeat(")", 500) + " }}", "nested deeper"},
		{"break outside loop", "{% break %}", "'break' outside a loop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := Parse("", tc.source, nil)
			if err == nil {
				_, err = tmpl.UserTurn("x", nil)
			}
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("want an error containing %q, got %v", tc.msg, err)
			}
		})
	}
}

func TestContentPartsFromGo(t *testing.T) {
	tmpl, err := Load("testdata/models/gemma3")
	if err != nil {
		t.Fatal(err)
	}
	for _, content := range []any{
		[]map[string]any{{"type": "image"}, {"type": "text", "text": "  What is this?  "}},
		[]any{map[string]string{"type": "image"}, map[string]any{"type": "text", "text": "What is this?"}},
	} {
		got, err := tmpl.Render([]Message{{Role: "user", Content: content}}, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := "<bos><start_of_turn>user\n<start_of_image>What is this?<end_of_turn>\n<start_of_turn>model\n"; got != want {
			t.Errorf("content %#v: got %q, want %q", content, got, want)
		}
	}
}
