package tokenizer

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// piece is a stretch of normalized text on its way to the model. first
// records that it starts at the very beginning of the input, which
// Metaspace's "first" prepend scheme needs.
type piece struct {
	text  string
	first bool
}

// preTokenizer splits one piece into smaller ones, appending them to dst.
type preTokenizer interface {
	appendPieces(dst []piece, p piece, ws *workspace) []piece
}

// behavior is a Split's SplitDelimiterBehavior: what becomes of the matches.
type behavior int

const (
	removed behavior = iota
	isolated
	mergedWithPrevious
	mergedWithNext
	contiguous
)

// segment is one stretch of a split piece, a match of the pattern or not.
type segment struct {
	start, end int
	match      bool
}

// splitPieces cuts p at matches and appends the pieces the behavior keeps,
// dropping empty ones, as Hugging Face's NormalizedString::split does.
func splitPieces(dst []piece, p piece, matches []span, b behavior, invert bool, ws *workspace) []piece {
	segs := ws.segments[:0]
	prev := 0
	for _, m := range matches {
		if m.start != prev {
			segs = append(segs, segment{prev, m.start, invert})
		}
		segs = append(segs, segment{m.start, m.end, !invert})
		prev = m.end
	}
	if prev != len(p.text) || len(segs) == 0 {
		segs = append(segs, segment{prev, len(p.text), invert})
	}
	ws.segments = segs

	emit := func(start, end int) {
		if start < end {
			dst = append(dst, piece{p.text[start:end], p.first && start == 0})
		}
	}
	switch b {
	case removed:
		for _, s := range segs {
			if !s.match {
				emit(s.start, s.end)
			}
		}
	case isolated:
		for _, s := range segs {
			emit(s.start, s.end)
		}
	case mergedWithPrevious:
		// A match joins the stretch before it (unless that was a match too).
		start, end := -1, -1
		prevMatch := false
		for _, s := range segs {
			if s.match && !prevMatch && start >= 0 {
				end = s.end
			} else {
				if start >= 0 {
					emit(start, end)
				}
				start, end = s.start, s.end
			}
			prevMatch = s.match
		}
		if start >= 0 {
			emit(start, end)
		}
	case mergedWithNext:
		// A match joins the stretch after it (unless that is a match too).
		start := -1
		for i, s := range segs {
			if start < 0 {
				start = s.start
			}
			if s.match && i+1 < len(segs) && !segs[i+1].match {
				continue
			}
			emit(start, s.end)
			start = -1
		}
	case contiguous:
		for i := 0; i < len(segs); {
			j := i + 1
			for j < len(segs) && segs[j].match == segs[i].match {
				j++
			}
			emit(segs[i].start, segs[j-1].end)
			i = j
		}
	}
	return dst
}

// splitPreTokenizer is Split: a String or Regex pattern, a behavior, invert.
type splitPreTokenizer struct {
	pattern  matcher
	behavior behavior
	invert   bool
}

func (t splitPreTokenizer) appendPieces(dst []piece, p piece, ws *workspace) []piece {
	if sc, ok := t.pattern.(scanner); ok && t.behavior == isolated && !t.invert {
		// The known patterns tile the text: the matches are the pieces.
		for i := 0; i < len(p.text); {
			end := sc.next(p.text, i)
			dst = append(dst, piece{p.text[i:end], p.first && i == 0})
			i = end
		}
		return dst
	}
	ws.spans = t.pattern.appendMatches(ws.spans[:0], p.text)
	return splitPieces(dst, p, ws.spans, t.behavior, t.invert, ws)
}

// byteLevelPreTokenizer is ByteLevel as the last pre-tokenizer: it may add
// a leading space and split with GPT-2's pattern; the byte-to-alphabet
// mapping itself is folded into the model (see bpe.byteMode).
type byteLevelPreTokenizer struct {
	addPrefixSpace bool
	useRegex       bool
}

var gpt2Scanner = scanner{next: nextGPT2}

func (t byteLevelPreTokenizer) appendPieces(dst []piece, p piece, ws *workspace) []piece {
	if t.addPrefixSpace && !strings.HasPrefix(p.text, " ") {
		p.text = " " + p.text
	}
	if !t.useRegex {
		if p.text != "" {
			dst = append(dst, p)
		}
		return dst
	}
	return splitPreTokenizer{pattern: gpt2Scanner, behavior: isolated}.appendPieces(dst, p, ws)
}

// prependScheme says when Metaspace puts the replacement in front.
type prependScheme int

const (
	prependAlways prependScheme = iota
	prependNever
	prependFirst
)

// metaspacePreTokenizer is Metaspace: spaces become the replacement ('▁'),
// which is prepended per the scheme, and the text is split before each one.
type metaspacePreTokenizer struct {
	replacement string
	scheme      prependScheme
	split       bool
}

func (t metaspacePreTokenizer) appendPieces(dst []piece, p piece, ws *workspace) []piece {
	p.text = strings.ReplaceAll(p.text, " ", t.replacement)
	if !strings.HasPrefix(p.text, t.replacement) &&
		(t.scheme == prependAlways || (t.scheme == prependFirst && p.first)) {
		p.text = t.replacement + p.text
	}
	if !t.split {
		if p.text != "" {
			dst = append(dst, p)
		}
		return dst
	}
	ws.spans = literalMatcher{t.replacement}.appendMatches(ws.spans[:0], p.text)
	return splitPieces(dst, p, ws.spans, mergedWithNext, false, ws)
}

// runeSplitPreTokenizer splits at every rune satisfying in, with a behavior:
// Digits, Punctuation and WhitespaceSplit are all of this shape.
type runeSplitPreTokenizer struct {
	in       func(rune) bool
	behavior behavior
}

func (t runeSplitPreTokenizer) appendPieces(dst []piece, p piece, ws *workspace) []piece {
	ws.spans = runeMatcher{t.in}.appendMatches(ws.spans[:0], p.text)
	return splitPieces(dst, p, ws.spans, t.behavior, false, ws)
}

// isNumeric is Rust's char::is_numeric (Nd, Nl, No), which Digits splits on.
func isNumeric(r rune) bool { return isNumber(r) && !inOlderUnicode(r) }

// isPunctuation is Hugging Face's is_punc: ASCII punctuation (which
// includes symbols such as '$' and '+') or a Unicode P category, as of its
// older tables.
func isPunctuation(r rune) bool {
	if r < utf8.RuneSelf {
		return (r >= '!' && r <= '/') || (r >= ':' && r <= '@') || (r >= '[' && r <= '`') || (r >= '{' && r <= '~')
	}
	return unicode.IsPunct(r) && !inOlderUnicode(r)
}

// whitespacePreTokenizer is Whitespace: the pieces are the matches of
// \w+|[^\w\s]+ (Unicode word characters as Rust's regex defines them).
type whitespacePreTokenizer struct{}

func (whitespacePreTokenizer) appendPieces(dst []piece, p piece, ws *workspace) []piece {
	s := p.text
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		var in func(rune) bool
		switch {
		case isWordChar(r):
			in = isWordChar
		case !isRegexSpace(r):
			in = func(r rune) bool { return !isWordChar(r) && !isRegexSpace(r) }
		default:
			i += n
			continue
		}
		end := skip(s, i, in)
		dst = append(dst, piece{s[i:end], p.first && i == 0})
		i = end
	}
	return dst
}

// isWordChar is \w in Rust's regex: Alphabetic, M, Nd, Pc and Join_Control,
// as of its tables, which are newer than Go's (see newerWord).
func isWordChar(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '_' || (r >= '0' && r <= '9') || (r|0x20) >= 'a' && (r|0x20) <= 'z'
	}
	if unicode.IsLetter(r) || unicode.In(r, unicode.M, unicode.Nd, unicode.Nl, unicode.Pc, unicode.Other_Alphabetic) ||
		r == 0x200C || r == 0x200D {
		return !inRanges(olderWord, r)
	}
	return inRanges(newerWord, r)
}

// isRegexSpace is \s in Rust's regex (White_Space), as of its tables.
func isRegexSpace(r rune) bool {
	if unicode.IsSpace(r) {
		return !inRanges(olderSpace, r)
	}
	return r >= utf8.RuneSelf && inRanges(newerSpace, r)
}

// bertPreTokenizer splits on whitespace (dropping it) and isolates each
// punctuation character.
type bertPreTokenizer struct{}

func (bertPreTokenizer) appendPieces(dst []piece, p piece, ws *workspace) []piece {
	s := p.text
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case unicode.IsSpace(r):
			i += n
		case isPunctuation(r):
			dst = append(dst, piece{s[i : i+n], p.first && i == 0})
			i += n
		default:
			end := skip(s, i, func(r rune) bool { return !unicode.IsSpace(r) && !isPunctuation(r) })
			dst = append(dst, piece{s[i:end], p.first && i == 0})
			i = end
		}
	}
	return dst
}

// parsePreTokenizer returns the chain of pre-tokenizers, Sequences
// flattened.
func parsePreTokenizer(raw json.RawMessage) ([]preTokenizer, error) {
	o, err := decodeObject(raw)
	if err != nil {
		return nil, err
	}
	one := func(p preTokenizer, err error) ([]preTokenizer, error) {
		if err != nil {
			return nil, err
		}
		return []preTokenizer{p}, nil
	}
	switch typ := o.typeName(); typ {
	case "Sequence":
		list, err := parseList(o, "pretokenizers", parsePreTokenizer)
		return slices.Concat(list...), err
	case "ByteLevel":
		p := byteLevelPreTokenizer{addPrefixSpace: true, useRegex: true}
		if err := o.field("add_prefix_space", &p.addPrefixSpace); err != nil {
			return nil, err
		}
		return one(p, o.field("use_regex", &p.useRegex))
	case "Split":
		var p splitPreTokenizer
		if p.pattern, err = parsePattern(o["pattern"]); err != nil {
			return nil, err
		}
		if p.behavior, err = parseBehavior(o, isolated); err != nil {
			return nil, err
		}
		return one(p, o.field("invert", &p.invert))
	case "Metaspace":
		p, err := parseMetaspace(o)
		return one(p, err)
	case "Digits":
		individual := false
		if err := o.field("individual_digits", &individual); err != nil {
			return nil, err
		}
		b := contiguous
		if individual {
			b = isolated
		}
		return one(runeSplitPreTokenizer{isNumeric, b}, nil)
	case "Punctuation":
		b, err := parseBehavior(o, isolated)
		return one(runeSplitPreTokenizer{isPunctuation, b}, err)
	case "CharDelimiterSplit":
		var delim string
		if err := o.field("delimiter", &delim); err != nil {
			return nil, err
		}
		r := []rune(delim)
		if len(r) != 1 {
			return nil, fmt.Errorf("pre-tokenizer CharDelimiterSplit: delimiter %q is not one character", delim)
		}
		return one(runeSplitPreTokenizer{func(c rune) bool { return c == r[0] }, removed}, nil)
	case "Whitespace":
		return one(whitespacePreTokenizer{}, nil)
	case "WhitespaceSplit":
		return one(runeSplitPreTokenizer{isSpaceRune, removed}, nil)
	case "BertPreTokenizer":
		return one(bertPreTokenizer{}, nil)
	default:
		return nil, fmt.Errorf("pre-tokenizer %q is not supported (supported: ByteLevel, Split, Metaspace, Digits, Punctuation, CharDelimiterSplit, Whitespace, WhitespaceSplit, BertPreTokenizer, Sequence)", typ)
	}
}

func isSpaceRune(r rune) bool { return isSpace(r) }

func parseBehavior(o object, def behavior) (behavior, error) {
	var name string
	if err := o.field("behavior", &name); err != nil {
		return 0, err
	}
	switch name {
	case "":
		return def, nil
	case "Removed":
		return removed, nil
	case "Isolated":
		return isolated, nil
	case "MergedWithPrevious":
		return mergedWithPrevious, nil
	case "MergedWithNext":
		return mergedWithNext, nil
	case "Contiguous":
		return contiguous, nil
	}
	return 0, fmt.Errorf("split behavior %q is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous", name)
}

// parseMetaspace reads the fields the Metaspace pre-tokenizer and decoder
// share; add_prefix_space is the legacy spelling of the prepend scheme.
func parseMetaspace(o object) (metaspacePreTokenizer, error) {
	p := metaspacePreTokenizer{replacement: "▁", scheme: prependAlways, split: true}
	if err := o.field("replacement", &p.replacement); err != nil {
		return p, err
	}
	if len([]rune(p.replacement)) != 1 {
		return p, fmt.Errorf("metaspace replacement %q is not one character", p.replacement)
	}
	if err := o.field("split", &p.split); err != nil {
		return p, err
	}
	var scheme string
	if err := o.field("prepend_scheme", &scheme); err != nil {
		return p, err
	}
	switch scheme {
	case "always":
	case "never":
		p.scheme = prependNever
	case "first":
		p.scheme = prependFirst
	case "":
		addPrefix := true
		if err := o.field("add_prefix_space", &addPrefix); err != nil {
			return p, err
		}
		if !addPrefix {
			p.scheme = prependNever
		}
	default:
		return p, fmt.Errorf("metaspace prepend_scheme %q is not one of always, never, first", scheme)
	}
	return p, nil
}
