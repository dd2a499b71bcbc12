package py

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// StrRepr renders s as Python's repr(str): single quotes unless the text
// holds a single quote and no double quote; backslash escapes for the
// quote, backslash, \t \n \r and the characters str.isprintable rejects
// (\xXX up to U+00FF, \uXXXX, \UXXXXXXXX). A byte that is not UTF-8
// prints as \udcXX, the surrogate escape Python gives such argv bytes.
func StrRepr(s string) string {
	quote := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		quote = '"'
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte(quote)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString(`\u`)
			writeHex(&b, 0xdc00|rune(s[i]), 4)
			i++
			continue
		}
		i += size
		switch {
		case r == rune(quote) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case unicode.IsPrint(r):
			b.WriteRune(r)
		case r <= 0xff:
			b.WriteString(`\x`)
			writeHex(&b, r, 2)
		case r <= 0xffff:
			b.WriteString(`\u`)
			writeHex(&b, r, 4)
		default:
			b.WriteString(`\U`)
			writeHex(&b, r, 8)
		}
	}
	b.WriteByte(quote)
	return b.String()
}

// writeHex writes r as exactly digits lower-case hex digits.
func writeHex(b *strings.Builder, r rune, digits int) {
	const hex = "0123456789abcdef"
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		b.WriteByte(hex[r>>shift&0xf])
	}
}

// IsSpace is Python's str.isspace for one character, the set str.strip()
// removes: Go's unicode.IsSpace plus the ASCII separators U+001C..U+001F.
func IsSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}
