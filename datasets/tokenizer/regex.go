package tokenizer

import (
	"errors"
	"fmt"
	"strings"
	"time"
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
// probeMatchTimeout. A sound pattern takes microseconds on them; an
// exponential one cannot finish a 64-character probe within the age of
// the machine, so the bound is far from both and a stalled CPU does not
// trip it.
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

// errBacktracking is why a pattern failed the probes.
var errBacktracking = errors.New("backtracks without bound (a match over a short run of repeated characters " +
	"did not finish within " + probeMatchTimeout.String() + "); the file's pre-tokenizer cannot be used")

// probeBacktracking runs re over every probe with probeMatchTimeout.
func probeBacktracking(re *regexp2.Regexp) error {
	saved := re.MatchTimeout
	re.MatchTimeout = probeMatchTimeout
	defer func() { re.MatchTimeout = saved }()
	for _, run := range probeRuns {
		probe := strings.Repeat(run, probeLen/utf8.RuneCountInString(run))
		if _, err := re.FindAllStringIndex(probe, -1); err != nil {
			return errBacktracking
		}
	}
	return nil
}

func (m regexMatcher) appendMatches(dst []span, s string) []span {
	idx, err := m.re.FindAllStringIndex(s, -1)
	if err != nil {
		// Only the match timeout fails here: the pattern blew up on
		// this text although it passed the probes.
		panic(fmt.Sprintf("tokenizer: split pattern %q gave up on a %d-byte text after %v (it backtracks without bound): %v",
			m.re.String(), len(s), encodeMatchTimeout, err))
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
