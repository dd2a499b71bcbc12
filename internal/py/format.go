package py

import (
	"strings"
	"unicode/utf8"
)

// Left is "{:<N}" with N = width: s padded with spaces on the right to
// width code points; a longer s is kept whole.
func Left(s string, width int) string {
	if n := utf8.RuneCountInString(s); n < width {
		return s + strings.Repeat(" ", width-n)
	}
	return s
}

// FormatCenter is "{:c^N}" with c = fill and N = width: s centred, the
// extra fill character of an odd padding on the right. (str.center
// places it differently; see Center.)
func FormatCenter(s string, fill byte, width int) string {
	pad := width - utf8.RuneCountInString(s)
	if pad <= 0 {
		return s
	}
	left := pad / 2
	return strings.Repeat(string(fill), left) + s + strings.Repeat(string(fill), pad-left)
}

// Center is str.center(width) with spaces: CPython puts the odd padding
// character on the left when both the padding and the width are odd,
// on the right otherwise.
func Center(s string, width int) string {
	pad := width - utf8.RuneCountInString(s)
	if pad <= 0 {
		return s
	}
	left := pad/2 + (pad & width & 1)
	return strings.Repeat(" ", left) + s + strings.Repeat(" ", pad-left)
}
