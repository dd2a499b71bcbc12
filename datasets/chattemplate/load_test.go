package chattemplate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFiles creates a tokenizer directory holding the given files.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const probe = "{{ bos_token }}|{{ eos_token }}|{{ pad_token }}|{{ unk_token }}|{{ additional_special_tokens }}|{{ messages[0].content }}"

func TestLoad(t *testing.T) {
	quoted := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }
	for _, tc := range []struct {
		name  string
		files map[string]string
		arg   string // path under the directory passed to Load; "" is the directory
		want  string
		err   string
	}{
		{
			name:  "string template and plain tokens",
			files: map[string]string{"tokenizer_config.json": `{"chat_template": ` + quoted(probe) + `, "bos_token": "<s>", "eos_token": "</s>"}`},
			want:  "<s>|</s>||||hi",
		},
		{
			name: "tokenizer.json path and AddedToken objects",
			files: map[string]string{
				"tokenizer.json":        `{}`,
				"tokenizer_config.json": `{"chat_template": ` + quoted(probe) + `, "bos_token": {"content": "<B>", "lstrip": false}, "pad_token": null, "additional_special_tokens": ["<x>", {"content": "<y>"}]}`,
			},
			arg:  "tokenizer.json",
			want: "<B>||||['<x>', '<y>']|hi",
		},
		{
			name: "chat_template.jinja wins over the config",
			files: map[string]string{
				"tokenizer_config.json": `{"chat_template": "old", "eos_token": "</s>"}`,
				"chat_template.jinja":   "new {{ eos_token }}\n",
			},
			want: "new </s>",
		},
		{
			name:  "chat_template.jinja without a config",
			files: map[string]string{"chat_template.jinja": "only {{ messages|length }}"},
			want:  "only 1",
		},
		{
			name:  "named templates pick default",
			files: map[string]string{"tokenizer_config.json": `{"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]}`},
			want:  "D",
		},
		{
			name: "special_tokens_map.json overrides the config",
			files: map[string]string{
				"tokenizer_config.json":   `{"chat_template": ` + quoted(probe) + `, "bos_token": "<s>", "unk_token": "<unk>"}`,
				"special_tokens_map.json": `{"bos_token": {"content": "<BOS>"}, "pad_token": "<pad>"}`,
			},
			want: "<BOS>||<pad>|<unk>||hi",
		},
		{
			name:  "no template",
			files: map[string]string{"tokenizer_config.json": `{"bos_token": "<s>"}`},
			err:   `tokenizer_config.json has no "chat_template"`,
		},
		{
			name:  "null template",
			files: map[string]string{"tokenizer_config.json": `{"chat_template": null}`},
			err:   "--skip-chat-template",
		},
		{
			name:  "named templates without default",
			files: map[string]string{"tokenizer_config.json": `{"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "rag", "template": "R"}]}`},
			err:   `none is named "default" (have tool_use, rag)`,
		},
		{
			name:  "template of the wrong type",
			files: map[string]string{"tokenizer_config.json": `{"chat_template": 5}`},
			err:   `"chat_template" must be a string or a list`,
		},
		{
			name:  "malformed config",
			files: map[string]string{"tokenizer_config.json": `{"chat_template": `},
			err:   "tokenizer_config.json: unexpected end of JSON input",
		},
		{
			name:  "no files at all",
			files: map[string]string{"tokenizer.json": `{}`},
			err:   "neither",
		},
		{
			name:  "syntax error names the file",
			files: map[string]string{"chat_template.jinja": "{% if %}"},
			err:   "chat_template.jinja line 1 col 7",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, tc.files)
			tmpl, err := Load(filepath.Join(dir, tc.arg))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("want error containing %q, got %v", tc.err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := tmpl.UserTurn("hi", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLoadMissingPath(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope", "tokenizer.json"))
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("want an error naming the path, got %v", err)
	}
}
