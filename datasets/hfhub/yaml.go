package hfhub

import (
	"strconv"
	"strings"
)

// The dataset card's front matter is YAML; stampede reads only the block
// mappings, block sequences, scalars and one-line flow lists that
// `configs:` is written in. Anything else (block scalars, anchors) is
// skipped over by indentation, not interpreted.

// yMap is a YAML mapping in document order.
type yMap struct {
	keys []string
	vals []any
}

func (m *yMap) get(k string) any {
	for i, key := range m.keys {
		if key == k {
			return m.vals[i]
		}
	}
	return nil
}

type yLine struct {
	indent int
	text   string
}

type yParser struct {
	lines []yLine
	pos   int
}

// parseYAML parses a YAML document into *yMap, []any and string values.
func parseYAML(src string) (any, error) {
	p := &yParser{}
	for _, raw := range strings.Split(src, "\n") {
		raw = strings.TrimRight(raw, " \r\t")
		trimmed := strings.TrimLeft(raw, " ")
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		p.lines = append(p.lines, yLine{len(raw) - len(trimmed), trimmed})
	}
	if len(p.lines) == 0 {
		return nil, nil
	}
	return p.block(p.lines[0].indent), nil
}

// block parses the node whose lines start at indent.
func (p *yParser) block(indent int) any {
	if p.pos >= len(p.lines) {
		return nil
	}
	if isSeqItem(p.lines[p.pos].text) {
		return p.sequence(indent)
	}
	return p.mapping(indent)
}

func isSeqItem(s string) bool { return s == "-" || strings.HasPrefix(s, "- ") }

func (p *yParser) sequence(indent int) []any {
	var out []any
	for p.pos < len(p.lines) {
		l := p.lines[p.pos]
		if l.indent != indent || !isSeqItem(l.text) {
			break
		}
		rest := strings.TrimLeft(strings.TrimPrefix(l.text, "-"), " ")
		if rest == "" {
			p.pos++
			if p.pos < len(p.lines) && p.lines[p.pos].indent > indent {
				out = append(out, p.block(p.lines[p.pos].indent))
			} else {
				out = append(out, nil)
			}
			continue
		}
		// "- key: value" opens a mapping whose keys sit at the text's column.
		inner := indent + (len(l.text) - len(rest))
		if _, _, ok := splitKey(rest); ok && !strings.HasPrefix(rest, "[") && !strings.HasPrefix(rest, "{") {
			p.lines[p.pos] = yLine{inner, rest}
			out = append(out, p.mapping(inner))
			continue
		}
		p.pos++
		out = append(out, scalar(rest))
	}
	return out
}

func (p *yParser) mapping(indent int) *yMap {
	m := &yMap{}
	for p.pos < len(p.lines) {
		l := p.lines[p.pos]
		if l.indent != indent || isSeqItem(l.text) {
			if l.indent > indent {
				p.pos++ // a continuation this parser does not read
				continue
			}
			break
		}
		key, val, ok := splitKey(l.text)
		if !ok {
			p.pos++
			continue
		}
		p.pos++
		var v any
		switch {
		case val == "" || val == "|" || val == ">" || strings.HasPrefix(val, "|") || strings.HasPrefix(val, ">"):
			if p.pos < len(p.lines) {
				next := p.lines[p.pos]
				if val == "" && (next.indent > indent || (next.indent == indent && isSeqItem(next.text))) {
					v = p.block(next.indent)
				} else {
					for p.pos < len(p.lines) && p.lines[p.pos].indent > indent {
						p.pos++
					}
				}
			}
		default:
			v = scalar(val)
		}
		m.keys = append(m.keys, key)
		m.vals = append(m.vals, v)
	}
	return m
}

// splitKey splits "key: value" (the key possibly quoted).
func splitKey(s string) (key, val string, ok bool) {
	if s != "" && (s[0] == '"' || s[0] == '\'') {
		end := strings.IndexByte(s[1:], s[0])
		if end < 0 {
			return "", "", false
		}
		key = s[1 : end+1]
		rest := s[end+2:]
		if !strings.HasPrefix(rest, ":") {
			return "", "", false
		}
		return key, strings.TrimSpace(rest[1:]), true
	}
	for i := 0; i < len(s); i++ {
		if s[i] == ':' && (i+1 == len(s) || s[i+1] == ' ') {
			return strings.TrimSpace(s[:i]), strings.TrimSpace(s[i+1:]), true
		}
	}
	return "", "", false
}

// scalar reads a plain or quoted scalar, or a one-line flow list.
func scalar(s string) any {
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		var out []any
		for _, part := range strings.Split(s[1:len(s)-1], ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, scalar(part))
			}
		}
		return out
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
		return s[1 : len(s)-1]
	}
	if len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'")
	}
	if i := strings.Index(s, " #"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}
