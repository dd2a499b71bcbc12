package py

import "testing"

// Expected strings are python3's repr() results; a byte that is not UTF-8
// stands for the surrogate escape os.fsdecode gives it in sys.argv.
func TestStrRepr(t *testing.T) {
	tests := map[string]string{
		"abc":        `'abc'`,
		"":           `''`,
		"it's":       `"it's"`,
		`say "hi"`:   `'say "hi"'`,
		`it's "x"`:   `'it\'s "x"'`,
		"a\\b":       `'a\\b'`,
		"tab\there":  `'tab\there'`,
		"nl\n":       `'nl\n'`,
		"cr\r":       `'cr\r'`,
		"\x01":       `'\x01'`,
		"\x7f":       `'\x7f'`,
		"\u00a0":     `'\xa0'`,
		"é€":         `'é€'`,
		"\u200b":     `'\u200b'`,
		"\U000e0001": `'\U000e0001'`,
		"bad\xffutf": `'bad\udcffutf'`,
	}
	for in, want := range tests {
		if got := StrRepr(in); got != want {
			t.Errorf("StrRepr(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestIsSpaceMatchesStrStrip(t *testing.T) {
	// python3: '\x1c7\x1f'.strip() == '7', ' a\x85'.strip() == 'a'.
	for _, r := range []rune{' ', '\t', '\n', '\v', '\f', '\r', 0x1c, 0x1d, 0x1e, 0x1f, 0x85, 0xa0, 0x3000} {
		if !IsSpace(r) {
			t.Errorf("IsSpace(%U) = false, want true", r)
		}
	}
	for _, r := range []rune{'a', '0', 0x1b, 0x200b} {
		if IsSpace(r) {
			t.Errorf("IsSpace(%U) = true, want false", r)
		}
	}
}
