package tokenizer

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
)

// regexMatcher runs a split pattern the scanners do not know through
// regexp2, whose default (.NET-style) syntax and Unicode classes are the
// closest Go has to Oniguruma, the engine Hugging Face uses. RE2 mode is not
// an option: it makes \s ASCII-only and has no lookahead.
type regexMatcher struct {
	re *regexp2.Regexp
}

func compileRegex(pattern string) (*regexp2.Regexp, error) {
	if strings.Contains(pattern, "&&") {
		// Class intersection ([a&&[^b]]) exists in Oniguruma and Rust's
		// regex but regexp2 would read "&&" as two literal ampersands.
		return nil, fmt.Errorf("pattern %q uses character-class intersection (&&), which is not supported", pattern)
	}
	re, err := regexp2.Compile(withNewerCategories(pattern), regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", pattern, err)
	}
	return re, nil
}

// newMatcher returns the fastest exact matcher for a regex split pattern.
func newMatcher(pattern string) (matcher, error) {
	if sc, ok := knownScanner(pattern); ok {
		return sc, nil
	}
	if pattern == spaceRunPattern {
		return spaceRunMatcher{}, nil
	}
	re, err := compileRegex(pattern)
	if err != nil {
		return nil, err
	}
	if err := probeBacktracking(re); err != nil {
		return nil, fmt.Errorf("pattern %q: %w", pattern, err)
	}
	re.MatchTimeout = encodeMatchTimeout
	return regexMatcher{re}, nil
}

// A split pattern is a backtracking regex run over every prompt, so a
// crafted tokenizer.json can make one match take exponential time
// ((\p{L}|\p{L}\p{L})+[0-9] grows about 1.6× per letter). Such a pattern is
// refused when it loads, the way Hugging Face's tokenizers gives up on it
// (Oniguruma's retry limit): it runs over probe texts, runs of one kind of
// character where nested quantifiers blow up, and must finish each within
// probeMatchTimeout. The probes are runs of a fixed set of characters
// (probeRuns) and, since a pattern's blow-up is usually over its own
// characters ((x|xx)+[0-9] is exponential on "xxx…" alone), runs built
// from the pattern's literals (patternProbes). A sound pattern takes
// microseconds on them; an exponential one cannot finish a 64-character
// probe within the age of the machine, so the bound is far from both and
// a stalled CPU does not trip it.
//
// A pattern can still blow up on a text no probe resembles. Every search
// while encoding is bounded by encodeMatchTimeout; one that gives up ends
// that Encode with a *PatternError naming the pattern, which the
// Tokenizer keeps for Err, never a panic that reaches the caller.
const (
	probeLen          = 64
	probeMatchTimeout = time.Second
	// encodeMatchTimeout bounds one search for the next match while
	// encoding, for a blow-up the probes did not find: the encode stops
	// with the pattern named instead of hanging the run.
	encodeMatchTimeout = 30 * time.Second
)

// probeRuns are the characters whose runs make up the probes: letters
// (ASCII, Latin-1, CJK), digits, spaces, newlines, punctuation, and the
// pairs that alternate classes.
var probeRuns = []string{"a", "é", "中", "1", " ", "\n", "!", "a1", "a ", " \n", "a!"}

// Bounds on the probes taken from a pattern's literals: the distinct
// literal characters (each one's run), the literal strings (each one
// repeated), and the characters paired as a prefix with another's run
// (y(x|xx)+z needs the y before the x's). Past them the probes would cost
// more at load than any pattern in a real tokenizer.json needs.
const (
	maxProbeLiterals = 64
	maxProbeStrings  = 32
	maxProbePrefixes = 16
)

// errBacktracking is why a pattern failed the probes.
var errBacktracking = errors.New("backtracks without bound (a match over a short run of repeated characters " +
	"did not finish within " + probeMatchTimeout.String() + "); the file's pre-tokenizer cannot be used")

// probeBacktracking runs re over every probe with probeMatchTimeout.
func probeBacktracking(re *regexp2.Regexp) error {
	saved := re.MatchTimeout
	re.MatchTimeout = probeMatchTimeout
	defer func() { re.MatchTimeout = saved }()
	for _, probe := range probeTexts(re.String()) {
		if _, err := re.FindAllStringIndex(probe, -1); err != nil {
			return errBacktracking
		}
	}
	return nil
}

// probeTexts are the probes for pattern: probeRuns' runs, then
// patternProbes'.
func probeTexts(pattern string) []string {
	var out []string
	for _, run := range probeRuns {
		out = append(out, repeatTo(run, probeLen))
	}
	return append(out, patternProbes(pattern)...)
}

// repeatTo is s repeated to n runes (at least once).
func repeatTo(s string, n int) string {
	return strings.Repeat(s, max(1, n/utf8.RuneCountInString(s)))
}

// patternProbes are the probes made of pattern's own literals: a run of
// each literal character, each literal string of two or more characters
// repeated, and each of the first literal characters followed by a run of
// each other one.
func patternProbes(pattern string) []string {
	chars, strs := patternLiterals(pattern)
	var out []string
	for _, c := range chars {
		out = append(out, repeatTo(string(c), probeLen))
	}
	for _, s := range strs {
		out = append(out, repeatTo(s, probeLen))
	}
	for _, p := range chars[:min(len(chars), maxProbePrefixes)] {
		for _, c := range chars {
			if c != p {
				out = append(out, string(p)+repeatTo(string(c), probeLen-1))
			}
		}
	}
	return out
}

// patternLiterals reads the literal characters of a regex pattern (those
// outside escapes of classes, anchors and groups' syntax, inside bracket
// classes as well, escaped ones such as \. and \x{4E00} included), each
// once in order of appearance, and its literal strings: the runs of two or
// more literal characters between operators. It reads the pattern as
// compileRegex's syntax has it, loosely: a literal it misses is a probe
// less, never an error.
func patternLiterals(pattern string) (chars []rune, strs []string) {
	seen := map[rune]bool{}
	var cur []rune
	addChar := func(r rune) {
		if !seen[r] && len(chars) < maxProbeLiterals {
			seen[r] = true
			chars = append(chars, r)
		}
	}
	endString := func() {
		if len(cur) >= 2 && len(strs) < maxProbeStrings && !slices.Contains(strs, string(cur)) {
			strs = append(strs, string(cur))
		}
		cur = cur[:0]
	}
	inClass := false
	for i := 0; i < len(pattern); {
		r, n := utf8.DecodeRuneInString(pattern[i:])
		switch {
		case r == '\\':
			lit, ok, width := escapeLiteral(pattern[i:])
			i += width
			if ok {
				addChar(lit)
				if !inClass {
					cur = append(cur, lit)
				}
			} else if !inClass {
				endString()
			}
			continue
		case inClass:
			if r == ']' {
				inClass = false
			} else if r != '^' && r != '-' {
				addChar(r)
			}
		case r == '[':
			endString()
			inClass = true
			if strings.HasPrefix(pattern[i+1:], "]") || strings.HasPrefix(pattern[i+1:], "^]") {
				addChar(']')
				i += strings.IndexByte(pattern[i+1:], ']') + 1
			}
		case r == '(' && strings.HasPrefix(pattern[i:], "(?"):
			endString()
			i += groupSyntaxLen(pattern[i:])
			continue
		case r == '{':
			endString()
			if end := strings.IndexByte(pattern[i:], '}'); end > 0 {
				i += end + 1
				continue
			}
		case strings.ContainsRune("()|*+?.^$", r):
			endString()
		default:
			addChar(r)
			cur = append(cur, r)
		}
		i += n
	}
	endString()
	return chars, strs
}

// escapeLiteral reads the escape at the start of s: the character it
// stands for when it stands for one (\. \n \x41 \x{4E00} \u00E9), and
// how many bytes it takes; ok is false for classes, anchors and
// back-references (\d \p{L} \b \1).
func escapeLiteral(s string) (lit rune, ok bool, width int) {
	if len(s) < 2 {
		return 0, false, len(s)
	}
	r, n := utf8.DecodeRuneInString(s[1:])
	width = 1 + n
	switch r {
	case 'n':
		return '\n', true, width
	case 't':
		return '\t', true, width
	case 'r':
		return '\r', true, width
	case 'f':
		return '\f', true, width
	case 'v':
		return '\v', true, width
	case 'e':
		return 0x1b, true, width
	case 'a':
		return 0x07, true, width
	case 'p', 'P', 'k', 'N':
		// \p{L}, \k<name>, \k'name': up to the closing bracket.
		if len(s) > 2 {
			if c := closingBracket(s[2]); c != 0 {
				if end := strings.IndexByte(s[3:], c); end >= 0 {
					return 0, false, 3 + end + 1
				}
			}
		}
		return 0, false, width
	case 'x', 'u':
		digits := s[2:]
		if r == 'x' && strings.HasPrefix(digits, "{") {
			end := strings.IndexByte(digits, '}')
			if end < 0 {
				return 0, false, width
			}
			v, err := strconv.ParseUint(digits[1:end], 16, 32)
			return rune(v), err == nil && utf8.ValidRune(rune(v)), 2 + end + 1
		}
		size := 2
		if r == 'u' {
			size = 4
		}
		if len(digits) < size {
			return 0, false, width
		}
		v, err := strconv.ParseUint(digits[:size], 16, 32)
		return rune(v), err == nil, 2 + size
	}
	if r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
		return 0, false, width // a class, an anchor or a back-reference
	}
	return r, true, width // an escaped symbol stands for itself
}

// closingBracket is the bracket that closes open in an escape's argument,
// 0 when open opens none.
func closingBracket(open byte) byte {
	switch open {
	case '{':
		return '}'
	case '<':
		return '>'
	case '\'':
		return '\''
	}
	return 0
}

// groupSyntaxLen is the length of a group's opening syntax at the start
// of s ("(?:", "(?<name>", "(?<=", "(?i)"...), which holds no literal.
func groupSyntaxLen(s string) int {
	for i := 2; i < len(s); i++ {
		switch s[i] {
		case ':', ')', '=', '!':
			return i + 1
		case '>', '\'':
			if i > 2 {
				return i + 1
			}
		}
	}
	return len(s)
}

// PatternError is an encode that gave up: a search of the split pattern
// over a text of TextLen bytes ran past encodeMatchTimeout. Tokenizer.Err
// reports the first.
type PatternError struct {
	Pattern string
	TextLen int
	Err     error
}

func (e *PatternError) Error() string {
	return fmt.Sprintf("tokenizer: split pattern %q gave up on a %d-byte text after %v: it backtracks without bound on that text "+
		"(the load's probes did not show it); the tokenizer file's pre-tokenizer cannot encode it: %v",
		e.Pattern, e.TextLen, encodeMatchTimeout, e.Err)
}

func (e *PatternError) Unwrap() error { return e.Err }

func (m regexMatcher) appendMatches(dst []span, s string) []span {
	idx, err := m.re.FindAllStringIndex(s, -1)
	if err != nil {
		// Only the match timeout fails here: the pattern blew up on
		// this text although it passed the probes. Encode recovers
		// this and returns it as the Tokenizer's Err.
		panic(&PatternError{Pattern: m.re.String(), TextLen: len(s), Err: err})
	}
	for _, ix := range idx {
		dst = append(dst, span{ix[0], ix[1]})
	}
	return dst
}

// literalMatcher matches a fixed string (a Split or Replace "String" pattern).
type literalMatcher struct {
	lit string
}

func (m literalMatcher) appendMatches(dst []span, s string) []span {
	if m.lit == "" {
		return dst
	}
	for off := 0; ; {
		k := strings.Index(s[off:], m.lit)
		if k < 0 {
			return dst
		}
		dst = append(dst, span{off + k, off + k + len(m.lit)})
		off += k + len(m.lit)
	}
}

// runeMatcher makes every rune satisfying in a match of its own, as Hugging
// Face's char-predicate patterns do (Digits, Punctuation, whitespace splits).
type runeMatcher struct {
	in func(rune) bool
}

func (m runeMatcher) appendMatches(dst []span, s string) []span {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if m.in(r) {
			dst = append(dst, span{i, i + n})
		}
		i += n
	}
	return dst
}

// withNewerCategories rewrites the \p{X} classes of pattern to hold the
// code points Oniguruma's tables put in X and Go's do not (newerCategory):
// \p{L} becomes [\p{L}\x{1C89}-\x{1C8A}...], or inside a bracket class
// \p{L}\x{1C89}-\x{1C8A}.... \P{X} outside a bracket class becomes
// [^\p{X}...]; inside one it is left as it is.
func withNewerCategories(pattern string) string {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case c == '\\' && i+1 < len(pattern):
			if p := pattern[i+1]; (p == 'p' || p == 'P') && i+2 < len(pattern) && pattern[i+2] == '{' {
				if end := strings.IndexByte(pattern[i+3:], '}'); end >= 0 {
					name := pattern[i+3 : i+3+end]
					extra := newerCategory[name]
					if len(extra) > 0 && (p == 'p' || !inClass) {
						if !inClass {
							b.WriteByte('[')
							if p == 'P' {
								b.WriteByte('^')
							}
						}
						b.WriteString(`\p{` + name + `}`)
						for _, rg := range extra {
							fmt.Fprintf(&b, `\x{%X}-\x{%X}`, rg[0], rg[1])
						}
						if !inClass {
							b.WriteByte(']')
						}
						i += 3 + end
						continue
					}
				}
			}
			b.WriteString(pattern[i : i+2])
			i++
			continue
		case c == '[' && !inClass:
			inClass = true
			b.WriteByte(c)
			// A ']' right after '[' or '[^' is a literal.
			if i+1 < len(pattern) && pattern[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(pattern) && pattern[i+1] == ']' {
				b.WriteByte(']')
				i++
			}
			continue
		case c == ']' && inClass:
			inClass = false
		}
		b.WriteByte(c)
	}
	return b.String()
}
