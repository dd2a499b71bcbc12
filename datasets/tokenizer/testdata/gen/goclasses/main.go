// Command goclasses prints, for unicodeskew.mjs, the non-ASCII code points
// that Go's tables put in the classes the tokenizer tests: \w (Alphabetic,
// M, Nd, Pc, Join_Control, as Rust's regex defines it) and \s (White_Space)
// for the Whitespace pre-tokenizer, and the general categories the split
// patterns name. It prints one JSON object: class name to a list of
// inclusive [lo, hi] ranges.
//
//	go run ./datasets/tokenizer/testdata/gen/goclasses
package main

import (
	"encoding/json"
	"os"
	"unicode"
)

func main() {
	classes := []struct {
		name string
		in   func(rune) bool
	}{
		{"word", func(r rune) bool {
			return unicode.IsLetter(r) || unicode.In(r, unicode.M, unicode.Nd, unicode.Nl, unicode.Pc, unicode.Other_Alphabetic) ||
				r == 0x200C || r == 0x200D
		}},
		{"space", unicode.IsSpace},
	}
	// The general categories the split patterns name (\p{L}, \p{Lu}, ...).
	for _, name := range []string{"L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "N", "P", "S"} {
		table := unicode.Categories[name]
		classes = append(classes, struct {
			name string
			in   func(rune) bool
		}{name, func(r rune) bool { return unicode.Is(table, r) }})
	}
	out := map[string][][2]rune{}
	for _, c := range classes {
		var ranges [][2]rune
		for r := rune(0x80); r <= unicode.MaxRune; r++ {
			if r >= 0xD800 && r <= 0xDFFF || !c.in(r) {
				continue
			}
			if n := len(ranges); n > 0 && ranges[n-1][1] == r-1 {
				ranges[n-1][1] = r
			} else {
				ranges = append(ranges, [2]rune{r, r})
			}
		}
		out[c.name] = ranges
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		os.Exit(1)
	}
}
