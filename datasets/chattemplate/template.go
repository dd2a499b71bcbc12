// Package chattemplate renders Hugging Face chat templates client-side,
// byte for byte as transformers' apply_chat_template(...,
// tokenize=False) does.
//
// transformers renders the template with jinja2's
// ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
// plus the loopcontrols extension, a tojson filter that calls
// json.dumps(ensure_ascii=False), and the globals raise_exception and
// strftime_now. This package implements the part of jinja2 that chat
// templates use with the same semantics: a lexer with jinja2's whitespace
// rules, a parser for its expression grammar, and a tree-walking
// interpreter over Python-like values (insertion-ordered dicts, Python's
// str() and repr(), Undefined that renders empty and fails on use).
//
// A Template is compiled once and is safe for concurrent Render calls.
//
// testdata/gen_golden.py renders the real templates of several model
// families, one template per construct, and a few hundred random
// templates with jinja2 itself; the tests compare byte for byte. Known
// differences, none of which a chat template depends on:
//
//   - integers are 64-bit (Python's are unbounded) and there are no
//     complex numbers;
//   - the iterator the reverse filter returns is not single-use and
//     prints without an address;
//   - str.format and the % operator know plain fields ({}, {0}, {name};
//     %s, %d, %r), not format specs;
//   - {% include %}, {% extends %}, {% import %}, {% block %} and
//     recursive loops are rejected, since a chat template has no other
//     templates to load.
package chattemplate

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Template is a compiled chat template together with the tokenizer's
// special tokens, which every render sees as variables.
type Template struct {
	name   string // where the template came from, for errors
	source string // normalized source, for error positions
	root   []node
	tokens map[string]any
	now    func() time.Time
}

// Message is one chat turn. Content is a string, nil (None), or a list
// of content parts such as []any{map[string]any{"type": "text", "text":
// "hi"}}. Extra holds further keys a template may read (tool_calls,
// reasoning_content, name, ...); Go maps have no order, so their keys
// are added in sorted order, after role and content.
type Message struct {
	Role    string
	Content any
	Extra   map[string]any
}

func (m Message) value() *dict {
	d := newDict(2 + len(m.Extra))
	d.Set("role", m.Role)
	d.Set("content", fromGo(m.Content))
	keys := make([]string, 0, len(m.Extra))
	for k := range m.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d.Set(k, fromGo(m.Extra[k]))
	}
	return d
}

// Error is a template syntax or render error at a position of the
// template source.
type Error struct {
	Template  string // file the template came from, if known
	Line, Col int    // 1-based; Col counts characters
	Msg       string
	off       int
	cause     error
}

func (e *Error) Error() string {
	where := "chat template"
	if e.Template != "" {
		where += " " + e.Template
	}
	return fmt.Sprintf("%s line %d col %d: %s", where, e.Line, e.Col, e.Msg)
}

func (e *Error) Unwrap() error { return e.cause }

// Parse compiles a template. name identifies it in errors (a file path,
// or "" for none); specialTokens are the render variables bos_token,
// eos_token and the like (strings, or a list of strings for
// additional_special_tokens).
func Parse(name, source string, specialTokens map[string]any) (*Template, error) {
	t := &Template{name: name, source: normalizeSource(source), now: time.Now}
	t.tokens = make(map[string]any, len(specialTokens))
	for k, v := range specialTokens {
		t.tokens[k] = fromGo(v)
	}
	toks, err := lex(t.source)
	if err != nil {
		return nil, t.locate(err)
	}
	if t.root, err = parse(toks); err != nil {
		return nil, t.locate(err)
	}
	return t, nil
}

// locate fills in the line and column of a template error.
func (t *Template) locate(err error) error {
	var te *Error
	if !errors.As(err, &te) {
		return err
	}
	off := min(max(te.off, 0), len(t.source))
	before := t.source[:off]
	te.Template = t.name
	te.Line = strings.Count(before, "\n") + 1
	te.Col = utf8.RuneCountInString(before[strings.LastIndexByte(before, '\n')+1:]) + 1
	return te
}

// reserved are the variables transformers passes by name; a kwarg with
// one of these names is a duplicate keyword argument in Python.
var reserved = []string{"messages", "tools", "documents", "add_generation_prompt"}

// Render is apply_chat_template(messages, add_generation_prompt=...,
// tokenize=False, **kwargs) with no tools or documents.
func (t *Template) Render(messages []Message, addGenerationPrompt bool, kwargs map[string]any) (string, error) {
	msgs := make([]any, len(messages))
	for i, m := range messages {
		msgs[i] = m.value()
	}
	return t.render(msgs, addGenerationPrompt, kwargs)
}

// UserTurn renders one user message with add_generation_prompt=True: the
// prompt a completions request carries in place of a chat request. Its
// method value satisfies datasets.ChatTemplate.
func (t *Template) UserTurn(prompt string, kwargs map[string]any) (string, error) {
	msg := newDict(2)
	msg.Set("role", "user")
	msg.Set("content", prompt)
	return t.render([]any{msg}, true, kwargs)
}

func (t *Template) render(messages []any, addGenerationPrompt bool, kwargs map[string]any) (string, error) {
	return t.renderWithTools(messages, nil, addGenerationPrompt, kwargs)
}

// renderWithTools renders messages and tools (nil: none) with the
// tokenizer's special tokens and kwargs, which may not set a variable the
// renderer sets.
func (t *Template) renderWithTools(messages []any, tools any, addGenerationPrompt bool, kwargs map[string]any) (string, error) {
	vars := make(map[string]any, len(t.tokens)+len(kwargs)+4)
	for k, v := range t.tokens {
		vars[k] = v
	}
	for k, v := range kwargs {
		for _, r := range reserved {
			if k == r {
				return "", fmt.Errorf("chat template kwargs: %q is set by the renderer and cannot be passed as a kwarg", k)
			}
		}
		vars[k] = fromGo(v)
	}
	vars["messages"] = messages
	vars["tools"] = tools
	vars["documents"] = nil
	vars["add_generation_prompt"] = addGenerationPrompt
	return t.execute(vars)
}

// execute renders the template with vars as the top-level context.
func (t *Template) execute(vars map[string]any) (string, error) {
	var out strings.Builder
	s := &state{out: &out, scope: &scope{vars: vars}, now: t.now}
	err := renderNodes(s, t.root)
	switch err {
	case nil:
		return out.String(), nil
	case errBreak, errContinue:
		return "", fmt.Errorf("chat template: %w", err)
	}
	return "", t.locate(err)
}
