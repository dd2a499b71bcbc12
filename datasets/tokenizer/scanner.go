package tokenizer

import (
	"slices"
	"unicode"
	"unicode/utf8"
)

// The split patterns of the popular byte-level families, as they appear in
// tokenizer.json (JSON-unescaped). Text split with one of these goes through
// a hand-written scanner instead of the regex engine: the scanners are 5-10×
// faster and FuzzScanners proves them equal to regexp2 on any input.
const (
	// patternLlama3 is cl100k_base's pattern, used by Llama-3 and GPT-4.
	patternLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// patternQwen is Qwen2/Qwen3's: cl100k's with single digits.
	patternQwen = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// patternO200k is o200k_base's (GPT-4o, gpt-oss).
	patternO200k = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// patternGPT2 is GPT-2's, implied by ByteLevel's use_regex.
	patternGPT2 = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
)

// span is a byte range [start, end) of a string.
type span struct{ start, end int }

// matcher finds the successive non-overlapping matches of a split pattern.
type matcher interface {
	appendMatches(dst []span, s string) []span
}

// scanner is a hand-written matcher for one of the known patterns. Each
// next function returns the end of the match that starts at i; the patterns
// match at every position, so the matches tile the whole string.
type scanner struct {
	next func(s string, i int) int
	// wordEnds: an ASCII letter followed by a space always ends a match,
	// whatever comes before or after (see chunk.go).
	wordEnds bool
}

func (sc scanner) appendMatches(dst []span, s string) []span {
	for i := 0; i < len(s); {
		end := sc.next(s, i)
		dst = append(dst, span{i, end})
		i = end
	}
	return dst
}

// knownScanner returns the scanner for pattern, if it is a known one.
func knownScanner(pattern string) (matcher, bool) {
	switch pattern {
	case patternLlama3:
		return scanner{next: func(s string, i int) int { return nextCl100k(s, i, 3) }, wordEnds: true}, true
	case patternQwen:
		return scanner{next: func(s string, i int) int { return nextCl100k(s, i, 1) }, wordEnds: true}, true
	case patternO200k:
		return scanner{next: nextO200k}, true
	case patternGPT2:
		return scanner{next: nextGPT2}, true
	}
	return nil, false
}

// runeAt decodes the rune at i; past the end it returns -1 and size 0.
func runeAt(s string, i int) (rune, int) {
	if i >= len(s) {
		return -1, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// The character classes of the patterns. isSpace is \s as both Oniguruma
// and regexp2 define it (Unicode White_Space).
func isLetter(r rune) bool {
	if r < utf8.RuneSelf {
		return (r|0x20) >= 'a' && (r|0x20) <= 'z'
	}
	return unicode.IsLetter(r) || inRanges(newerLetters, r)
}

// The categories as Oniguruma's tables have them: Go's plus the code
// points newer than Go's tables (see newerCategory).
var (
	newerLetters = newerCategory["L"]
	newerNumbers = newerCategory["N"]
	newerUpper   = slices.Concat(newerCategory["Lu"], newerCategory["Lt"], newerCategory["Lm"], newerCategory["Lo"], newerCategory["M"])
	newerLower   = slices.Concat(newerCategory["Ll"], newerCategory["Lm"], newerCategory["Lo"], newerCategory["M"])
)

func init() {
	for _, t := range [][][2]rune{newerUpper, newerLower} {
		slices.SortFunc(t, func(a, b [2]rune) int { return int(a[0] - b[0]) })
	}
}

func isNumber(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= '0' && r <= '9'
	}
	return unicode.IsNumber(r) || inRanges(newerNumbers, r)
}

func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || (r >= '\t' && r <= '\r')
	}
	return r >= 0 && unicode.IsSpace(r)
}

func isCRLF(r rune) bool { return r == '\r' || r == '\n' }

// isOther is [^\s\p{L}\p{N}].
func isOther(r rune) bool { return r >= 0 && !isSpace(r) && !isLetter(r) && !isNumber(r) }

// isPrefix is [^\r\n\p{L}\p{N}].
func isPrefix(r rune) bool { return r >= 0 && !isCRLF(r) && !isLetter(r) && !isNumber(r) }

// contraction returns the end of (?i:'s|'t|'re|'ve|'m|'ll|'d) at i, or -1.
// caseFold false gives GPT-2's case-sensitive form.
func contraction(s string, i int, caseFold bool) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return -1
	}
	lower := func(c byte) byte {
		if caseFold && c >= 'A' && c <= 'Z' {
			return c + 'a' - 'A'
		}
		return c
	}
	switch lower(s[i+1]) {
	case 's', 't', 'm', 'd':
		return i + 2
	case 'r', 'v':
		if i+2 < len(s) && lower(s[i+2]) == 'e' {
			return i + 3
		}
	case 'l':
		if i+2 < len(s) && lower(s[i+2]) == 'l' {
			return i + 3
		}
	}
	return -1
}

// skip returns the end of the run of runes satisfying in, starting at i.
func skip(s string, i int, in func(rune) bool) int {
	for i < len(s) {
		r, n := runeAt(s, i)
		if !in(r) {
			break
		}
		i += n
	}
	return i
}

// whitespace matches the three whitespace alternatives shared by every
// pattern, at i where s[i] starts a \s run: \s*[\r\n]+ (only if newlines
// count), then \s+(?!\S), then \s+.
func whitespace(s string, i int, newlines bool) int {
	end, lastCRLF, lastStart := i, -1, i
	for end < len(s) {
		r, n := runeAt(s, end)
		if !isSpace(r) {
			break
		}
		if isCRLF(r) {
			lastCRLF = end
		}
		lastStart = end
		end += n
	}
	if newlines && lastCRLF >= 0 {
		// \s* backs off to the last newline of the run; [\r\n]+ takes it.
		return lastCRLF + 1
	}
	if end == len(s) || lastStart == i {
		// At the end of the text, or a single space before \S (then
		// \s+(?!\S) fails and \s+ takes the one rune).
		return end
	}
	// \s+(?!\S) leaves the run's last rune for the word after it.
	return lastStart
}

// nextCl100k is the scanner of patternLlama3 (maxDigits 3) and patternQwen
// (maxDigits 1).
func nextCl100k(s string, i, maxDigits int) int {
	if end := contraction(s, i, true); end >= 0 {
		return end
	}
	r, n := runeAt(s, i)
	if isLetter(r) {
		return skip(s, i+n, isLetter)
	}
	if isPrefix(r) {
		if r2, _ := runeAt(s, i+n); isLetter(r2) {
			return skip(s, i+n, isLetter)
		}
	}
	return numberOrRest(s, i, maxDigits, isCRLF)
}

// o200k's letter classes: upper = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}],
// lower = [\p{Ll}\p{Lm}\p{Lo}\p{M}].
func isO200kUpper(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'A' && r <= 'Z'
	}
	return r >= 0 && (unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M) || inRanges(newerUpper, r))
}

func isO200kLower(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z'
	}
	return r >= 0 && (unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M) || inRanges(newerLower, r))
}

// o200kWord tries upper*lower+ at i (the first alternative after its
// optional prefix), backtracking the upper run as the regex does; it returns
// the end before the optional contraction, or -1.
func o200kWord(s string, i int) int {
	upperEnd := skip(s, i, isO200kUpper)
	if r, _ := runeAt(s, upperEnd); isO200kLower(r) {
		return skip(s, upperEnd, isO200kLower)
	}
	// Give back runes of the upper run until one can start lower+.
	for p := upperEnd; p > i; {
		r, n := utf8.DecodeLastRuneInString(s[i:p])
		p -= n
		if isO200kLower(r) {
			return skip(s, p, isO200kLower)
		}
	}
	return -1
}

func nextO200k(s string, i int) int {
	r, n := runeAt(s, i)
	withContraction := func(end int) int {
		if c := contraction(s, end, true); c >= 0 {
			return c
		}
		return end
	}
	// First alternative: prefix? upper* lower+ contraction?
	if isPrefix(r) {
		if end := o200kWord(s, i+n); end >= 0 {
			return withContraction(end)
		}
	}
	if end := o200kWord(s, i); end >= 0 {
		return withContraction(end)
	}
	// Second alternative: prefix? upper+ lower* contraction?
	if isPrefix(r) {
		if r2, _ := runeAt(s, i+n); isO200kUpper(r2) {
			end := skip(s, skip(s, i+n, isO200kUpper), isO200kLower)
			return withContraction(end)
		}
	}
	if isO200kUpper(r) {
		end := skip(s, skip(s, i, isO200kUpper), isO200kLower)
		return withContraction(end)
	}
	return numberOrRest(s, i, 3, isO200kTail)
}

func isO200kTail(r rune) bool { return isCRLF(r) || r == '/' }

// numberOrRest matches the alternatives the cl100k and o200k patterns end
// with, at i: \p{N}{1,maxDigits}, then " ?[^\s\p{L}\p{N}]+" followed by a run
// of tail runes, then the whitespace alternatives.
func numberOrRest(s string, i, maxDigits int, tail func(rune) bool) int {
	r, n := runeAt(s, i)
	if isNumber(r) {
		end := i + n
		for k := 1; k < maxDigits; k++ {
			r2, n2 := runeAt(s, end)
			if !isNumber(r2) {
				break
			}
			end += n2
		}
		return end
	}
	start := i
	if r == ' ' {
		if r2, _ := runeAt(s, i+1); isOther(r2) {
			start = i + 1
			r = r2
		}
	}
	if isOther(r) {
		return skip(s, skip(s, start, isOther), tail)
	}
	return whitespace(s, i, true)
}

func nextGPT2(s string, i int) int {
	if end := contraction(s, i, false); end >= 0 {
		return end
	}
	r, n := runeAt(s, i)
	start, n0 := i, n
	if r == ' ' {
		if r2, n2 := runeAt(s, i+1); r2 >= 0 && !isSpace(r2) {
			start, r, n0 = i+1, r2, n2
		}
	}
	switch {
	case isLetter(r):
		return skip(s, start+n0, isLetter)
	case isNumber(r):
		return skip(s, start+n0, isNumber)
	case isOther(r):
		return skip(s, start+n0, isOther)
	}
	return whitespace(s, i, false)
}
