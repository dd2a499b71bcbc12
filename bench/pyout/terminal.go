package pyout

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TerminalText is s made safe to print on a terminal: text that came from
// a server (reason phrases, error texts, model names) could otherwise
// carry ESC sequences that move the cursor, retitle the window or hide
// lines, or BEL. Control characters other than newline and tab (C0, DEL,
// C1) and bytes that are not UTF-8 are written as escapes: \r, \xNN, or
// \u00NN for C1. Python prints such text raw; the result JSON keeps it
// as Python saves it, so only what reaches the terminal is escaped.
func TerminalText(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsEscape reports whether TerminalText would change s (a literal
// U+FFFD takes the slow path and stays as it is).
func needsEscape(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || (unicode.IsControl(r) && r != '\n' && r != '\t') {
			return true
		}
	}
	return false
}
