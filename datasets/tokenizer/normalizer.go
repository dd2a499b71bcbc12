package tokenizer

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites a text segment before pre-tokenization. It returns s
// itself when nothing changes, so the common case does not allocate.
type normalizer interface {
	normalize(s string) string
}

type unicodeNormalizer struct{ form norm.Form }

func (n unicodeNormalizer) normalize(s string) string {
	if isASCII(s) || n.form.IsNormalString(s) {
		return s
	}
	return normalizeForm(n.form, s)
}

// normalizeForm is form.String(s) as Hugging Face's normalizers compute
// it: the code points their tables leave unassigned (see unnormalized)
// stay as they are, and, being starters that compose with nothing, cut
// the text into pieces that are normalized on their own. Go's tables would
// decompose them, reorder them among the marks around them or compose
// across them.
func normalizeForm(form norm.Form, s string) string {
	cut := -1
	for i, r := range s {
		if r >= 0x300 && inRanges(unnormalized, r) {
			cut = i
			break
		}
	}
	if cut < 0 {
		return form.String(s)
	}
	// Each piece is normalized on its own into tmp: AppendString onto the
	// text so far would normalize across the cut.
	b := make([]byte, 0, len(s)+len(s)/4)
	var tmp []byte
	start := 0
	for i, r := range s[cut:] {
		i += cut
		if r < 0x300 || !inRanges(unnormalized, r) {
			continue
		}
		tmp = form.AppendString(tmp[:0], s[start:i])
		b = append(b, tmp...)
		b = utf8.AppendRune(b, r)
		start = i + utf8.RuneLen(r)
	}
	tmp = form.AppendString(tmp[:0], s[start:])
	return string(append(b, tmp...))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

type lowercaseNormalizer struct{}

func (lowercaseNormalizer) normalize(s string) string { return lowercase(s) }

// lowercase lowers rune by rune, as Rust's char::to_lowercase does: no
// final-sigma rule, and 'İ' becomes "i̇".
func lowercase(s string) string {
	changed := false
	for _, r := range s {
		if unicode.ToLower(r) != r {
			changed = true
			break
		}
	}
	if !changed {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r == 'İ' {
			b.WriteString("i\u0307")
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

type stripNormalizer struct{ left, right bool }

func (n stripNormalizer) normalize(s string) string {
	if n.left {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
	}
	if n.right {
		s = strings.TrimRightFunc(s, unicode.IsSpace)
	}
	return s
}

type prependNormalizer struct{ prefix string }

func (n prependNormalizer) normalize(s string) string {
	if s == "" {
		return s
	}
	return n.prefix + s
}

// replaceNormalizer replaces every match of a String or Regex pattern.
type replaceNormalizer struct {
	pattern matcher
	content string
}

func (n replaceNormalizer) normalize(s string) string {
	return replaceAll(s, n.pattern, n.content)
}

func replaceAll(s string, pattern matcher, content string) string {
	if lit, ok := pattern.(literalMatcher); ok {
		if !strings.Contains(s, lit.lit) {
			return s
		}
		return strings.ReplaceAll(s, lit.lit, content)
	}
	matches := pattern.appendMatches(nil, s)
	if len(matches) == 0 {
		return s
	}
	var b strings.Builder
	prev := 0
	for _, m := range matches {
		b.WriteString(s[prev:m.start])
		b.WriteString(content)
		prev = m.end
	}
	b.WriteString(s[prev:])
	return b.String()
}

type sequenceNormalizer []normalizer

func (seq sequenceNormalizer) normalize(s string) string {
	for _, n := range seq {
		s = n.normalize(s)
	}
	return s
}

// bertNormalizer is BERT's: drop control characters and map whitespace to
// ' ', pad CJK ideographs with spaces, strip accents, lowercase.
type bertNormalizer struct {
	cleanText, chineseChars, stripAccents, lowercase bool
}

func (n bertNormalizer) normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/4)
	for _, r := range s {
		if n.cleanText {
			if r == 0 || r == utf8.RuneError || isBertControl(r) {
				continue
			}
			if isBertWhitespace(r) {
				r = ' '
			}
		}
		if n.chineseChars && isCJKIdeograph(r) {
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
			continue
		}
		b.WriteRune(r)
	}
	out := b.String()
	if n.stripAccents {
		out = normalizeForm(norm.NFD, out)
		out = strings.Map(func(r rune) rune {
			if isNonspacingMark(r) {
				return -1
			}
			return r
		}, out)
	}
	if n.lowercase {
		out = lowercase(out)
	}
	return out
}

func isBertWhitespace(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' || unicode.IsSpace(r)
}

// isBertControl is BERT's control test minus tab, newline and return:
// categories Cc, Cf, Co and Cs. Unassigned code points (Cn) stay in the
// text, as they do in Hugging Face's build.
func isBertControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs) && !inOlderUnicode(r)
}

// isCJKIdeograph is BERT's "Chinese character" test: the CJK Unified
// Ideographs blocks and their compatibility blocks, as Hugging Face spells
// them: its Extension E range starts at U+2B920, not U+2B820, so
// U+2B820-U+2B91F stay in their words.
func isCJKIdeograph(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) || (r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B920 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}

// stripAccentsNormalizer drops combining marks of every kind (Mn, Mc, Me),
// unlike BertNormalizer's accent stripping, which drops Mn only. It does not
// decompose first; tokenizer.json pairs it with NFD or NFKD for that. Its
// marks are Hugging Face's (strippedMarks), whose tables are neither Go's
// nor BERT's.
type stripAccentsNormalizer struct{}

func (stripAccentsNormalizer) normalize(s string) string {
	if isASCII(s) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r >= utf8.RuneSelf && inRanges(strippedMarks, r) {
			return -1
		}
		return r
	}, s)
}

// isNonspacingMark is Hugging Face's is_mark_nonspacing: Mn, as of its
// older tables.
func isNonspacingMark(r rune) bool {
	return r >= utf8.RuneSelf && unicode.Is(unicode.Mn, r) && !inOlderUnicode(r)
}

// inOlderUnicode reports whether r is one of the code points Hugging
// Face's tables leave unassigned (see unicodeskew.go).
func inOlderUnicode(r rune) bool { return inRanges(olderUnicode, r) }

// inRanges reports whether r lies in one of the sorted inclusive ranges.
func inRanges(ranges [][2]rune, r rune) bool {
	_, found := slices.BinarySearchFunc(ranges, r, func(rg [2]rune, r rune) int {
		switch {
		case rg[1] < r:
			return -1
		case rg[0] > r:
			return 1
		}
		return 0
	})
	return found
}

func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	o, err := decodeObject(raw)
	if err != nil {
		return nil, err
	}
	switch typ := o.typeName(); typ {
	case "NFC":
		return unicodeNormalizer{norm.NFC}, nil
	case "NFD":
		return unicodeNormalizer{norm.NFD}, nil
	case "NFKC":
		return unicodeNormalizer{norm.NFKC}, nil
	case "NFKD":
		return unicodeNormalizer{norm.NFKD}, nil
	case "Lowercase":
		return lowercaseNormalizer{}, nil
	case "StripAccents":
		return stripAccentsNormalizer{}, nil
	case "Strip":
		n := stripNormalizer{left: true, right: true}
		if err := o.field("strip_left", &n.left); err != nil {
			return nil, err
		}
		return n, o.field("strip_right", &n.right)
	case "Prepend":
		var n prependNormalizer
		return n, o.field("prepend", &n.prefix)
	case "Replace":
		n := replaceNormalizer{}
		if n.pattern, err = parsePattern(o["pattern"]); err != nil {
			return nil, err
		}
		return n, o.field("content", &n.content)
	case "BertNormalizer":
		n := bertNormalizer{cleanText: true, chineseChars: true, lowercase: true}
		var strip *bool
		for key, v := range map[string]any{"clean_text": &n.cleanText, "handle_chinese_chars": &n.chineseChars,
			"lowercase": &n.lowercase, "strip_accents": &strip} {
			if err := o.field(key, v); err != nil {
				return nil, err
			}
		}
		// strip_accents null follows lowercase, as in BERT's original code.
		n.stripAccents = n.lowercase
		if strip != nil {
			n.stripAccents = *strip
		}
		return n, nil
	case "Precompiled":
		return parsePrecompiled(o)
	case "Sequence":
		list, err := parseList(o, "normalizers", parseNormalizer)
		return sequenceNormalizer(list), err
	default:
		return nil, fmt.Errorf("normalizer %q is not supported (supported: NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, Strip, Prepend, Replace, BertNormalizer, Precompiled, Sequence)", typ)
	}
}
