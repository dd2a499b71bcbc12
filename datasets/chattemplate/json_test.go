package chattemplate

import "testing"

func TestRenderJSONTools(t *testing.T) {
	src := `{% if tools %}{% for t in tools %}{{ t | tojson }};{% endfor %}{% endif %}{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<gen>{% endif %}`
	tmpl, err := Parse("", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.RenderJSON([]byte(`[{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]`),
		[]byte(`[{"type": "function", "function": {"name": "f", "b": 1, "a": [2.5, null]}}]`), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	// tojson keeps the tools' key order (Python dicts from the same JSON).
	want := `{"type": "function", "function": {"name": "f", "b": 1, "a": [2.5, null]}};<system>s<user>u<gen>`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	none, err := tmpl.RenderJSON([]byte(`[{"role": "user", "content": "x"}]`), nil, true, nil)
	if err != nil || none != "<user>x<gen>" {
		t.Errorf("no tools: %q %v", none, err)
	}
	if _, err := tmpl.RenderJSON([]byte(`{"role": "user"}`), nil, true, nil); err == nil {
		t.Error("messages that are not a list were accepted")
	}
}
