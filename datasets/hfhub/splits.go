package hfhub

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// selectSplit picks split's files from a repository listing (sorted,
// slash-separated) the way load_dataset resolves data files: the dataset
// card's `configs:` when it has them, else the library's default
// patterns (the push_to_hub layout data/<split>-NNNNN-of-NNNNN, then a
// split keyword in a directory name, then in a file name, then every file
// as "train").
func selectSplit(card string, files []string, subset, split string) ([]string, error) {
	if cfgs := cardConfigs(card); len(cfgs) > 0 {
		cfg, err := pickConfig(cfgs, subset)
		if err != nil {
			return nil, err
		}
		var names []string
		for _, s := range cfg.splits {
			names = append(names, s.name)
			if s.name == split {
				return matchAll(files, s.patterns), nil
			}
		}
		return nil, &SplitError{Msg: fmt.Sprintf("Unknown split %q. Should be one of %s.", split, pyList(names))}
	}
	if subset != "" {
		var under []string
		for _, f := range files {
			if strings.HasPrefix(f, subset+"/") {
				under = append(under, f)
			}
		}
		if len(under) == 0 {
			return nil, &SplitError{Msg: fmt.Sprintf("BuilderConfig '%s' not found: no config list in the dataset card and no directory %s/", subset, subset)}
		}
		files = under
	}
	splits := inferSplits(files)
	var names []string
	for _, s := range splits {
		names = append(names, s.name)
		if s.name == split {
			return s.files, nil
		}
	}
	return nil, &SplitError{Msg: fmt.Sprintf("Unknown split %q. Should be one of %s.", split, pyList(names))}
}

func pyList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

type inferred struct {
	name  string
	files []string
}

// splitKeywords are datasets' SPLIT_KEYWORDS, in its order.
var splitKeywords = []struct {
	split    string
	keywords []string
}{
	{"train", []string{"train", "training"}},
	{"validation", []string{"validation", "valid", "dev", "val"}},
	{"test", []string{"test", "testing", "eval", "evaluation"}},
}

// pushedLayout is push_to_hub's file name: data/<split>-00000-of-00003*.
var pushedLayout = regexp.MustCompile(`^data/([^/]+?)-[0-9]{5}-of-[0-9]{5}[^/]*$`)

// inferSplits is datasets' default data-file patterns.
func inferSplits(files []string) []inferred {
	var pushed []inferred
	for _, f := range files {
		if m := pushedLayout.FindStringSubmatch(f); m != nil {
			pushed = addTo(pushed, m[1], f)
		}
	}
	if len(pushed) > 0 {
		return pushed
	}
	for _, inDir := range []bool{true, false} {
		var out []inferred
		for _, sk := range splitKeywords {
			var matched []string
			for _, f := range files {
				if hasKeyword(f, sk.keywords, inDir) {
					matched = append(matched, f)
				}
			}
			if len(matched) > 0 {
				out = append(out, inferred{sk.split, matched})
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	if len(files) == 0 {
		return nil
	}
	return []inferred{{"train", files}}
}

func addTo(list []inferred, name, f string) []inferred {
	for i := range list {
		if list[i].name == name {
			list[i].files = append(list[i].files, f)
			return list
		}
	}
	return append(list, inferred{name, []string{f}})
}

// isNonWord is datasets' NON_WORDS_CHARS: "-._ 0-9".
func isNonWord(r rune) bool {
	return r == '-' || r == '.' || r == '_' || r == ' ' || (r >= '0' && r <= '9')
}

// hasKeyword reports whether a directory name (inDir) or the file name of
// f holds one of keywords as a word.
func hasKeyword(f string, keywords []string, inDir bool) bool {
	parts := strings.Split(f, "/")
	names := parts[len(parts)-1:]
	if inDir {
		names = parts[:len(parts)-1]
	}
	for _, name := range names {
		for _, w := range strings.FieldsFunc(name, isNonWord) {
			for _, k := range keywords {
				if w == k {
					return true
				}
			}
		}
	}
	return false
}

// matchAll returns the files matching any of the glob patterns, in
// pattern order, each file once.
func matchAll(files, patterns []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range patterns {
		re := globRegexp(strings.TrimPrefix(p, "./"))
		var hits []string
		for _, f := range files {
			if !seen[f] && re.MatchString(f) {
				hits = append(hits, f)
				seen[f] = true
			}
		}
		sort.Strings(hits)
		out = append(out, hits...)
	}
	return out
}

// globRegexp compiles an fsspec glob: ** crosses directories, * and ?
// do not, [...] is a character class.
func globRegexp(p string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '*':
			if i+1 < len(p) && p[i+1] == '*' {
				i++
				if i+1 < len(p) && p[i+1] == '/' {
					i++
					b.WriteString("(?:.*/)?")
				} else {
					b.WriteString(".*")
				}
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			b.WriteString("[^/]")
		case '[':
			j := strings.IndexByte(p[i:], ']')
			if j < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := p[i+1 : i+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += j
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return regexp.MustCompile("^" + regexp.QuoteMeta(p) + "$")
	}
	return re
}

type cardSplit struct {
	name     string
	patterns []string
}

type cardConfig struct {
	name   string
	isDflt bool
	splits []cardSplit
}

// pickConfig is the config called subset, or the default one: marked
// `default: true`, else named "default", else the only one.
func pickConfig(cfgs []cardConfig, subset string) (cardConfig, error) {
	var names []string
	for _, c := range cfgs {
		names = append(names, c.name)
	}
	if subset != "" {
		for _, c := range cfgs {
			if c.name == subset {
				return c, nil
			}
		}
		return cardConfig{}, &SplitError{Msg: fmt.Sprintf("BuilderConfig '%s' not found. Available: %s", subset, pyList(names))}
	}
	for _, c := range cfgs {
		if c.isDflt {
			return c, nil
		}
	}
	for _, c := range cfgs {
		if c.name == "default" {
			return c, nil
		}
	}
	if len(cfgs) == 1 {
		return cfgs[0], nil
	}
	return cardConfig{}, &SplitError{Msg: fmt.Sprintf("Config name is missing. Please pick one among the available configs: %s (--hf-subset)", pyList(names))}
}

// cardConfigs reads the `configs:` list of a dataset card's YAML front
// matter; configs without data_files are left out.
func cardConfigs(card string) []cardConfig {
	front, ok := frontMatter(card)
	if !ok {
		return nil
	}
	root, _ := parseYAML(front)
	top, _ := root.(*yMap)
	if top == nil {
		return nil
	}
	list, _ := top.get("configs").([]any)
	var out []cardConfig
	for _, item := range list {
		m, _ := item.(*yMap)
		if m == nil {
			continue
		}
		c := cardConfig{name: "default"}
		if s, ok := m.get("config_name").(string); ok {
			c.name = s
		}
		if s, ok := m.get("default").(string); ok && strings.EqualFold(s, "true") {
			c.isDflt = true
		}
		switch df := m.get("data_files").(type) {
		case string:
			c.splits = []cardSplit{{"train", []string{df}}}
		case []any:
			for _, e := range df {
				switch e := e.(type) {
				case string:
					c.splits = mergeSplit(c.splits, "train", []string{e})
				case *yMap:
					name, _ := e.get("split").(string)
					if name == "" {
						name = "train"
					}
					c.splits = mergeSplit(c.splits, name, stringsOf(e.get("path")))
				}
			}
		case *yMap:
			for i, k := range df.keys {
				c.splits = mergeSplit(c.splits, k, stringsOf(df.vals[i]))
			}
		}
		if len(c.splits) > 0 {
			out = append(out, c)
		}
	}
	return out
}

func mergeSplit(splits []cardSplit, name string, patterns []string) []cardSplit {
	for i := range splits {
		if splits[i].name == name {
			splits[i].patterns = append(splits[i].patterns, patterns...)
			return splits
		}
	}
	return append(splits, cardSplit{name, patterns})
}

func stringsOf(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// frontMatter is the YAML between a card's leading "---" lines.
func frontMatter(card string) (string, bool) {
	card = strings.TrimPrefix(card, "\ufeff")
	if !strings.HasPrefix(card, "---") {
		return "", false
	}
	rest := card[3:]
	if i := strings.IndexByte(rest, '\n'); i >= 0 {
		rest = rest[i+1:]
	} else {
		return "", false
	}
	for off := 0; off < len(rest); {
		end := strings.IndexByte(rest[off:], '\n')
		line := rest[off:]
		if end >= 0 {
			line = rest[off : off+end]
		}
		if strings.TrimRight(line, " \r") == "---" {
			return rest[:off], true
		}
		if end < 0 {
			break
		}
		off += end + 1
	}
	return "", false
}
