package cli

import (
	"errors"
	"strconv"
	"strings"
	"unicode"
)

// This file holds the Python value rules argparse applies through its int
// type function and vLLM's human_readable_int. Messages must read exactly
// as Python's, so these follow CPython, not strconv; float() and the repr
// forms messages print are in internal/py.

var errNotANumber = errors.New("not a number")

// parsePyInt parses s as Python's int(s) does for base 10: surrounding
// whitespace, an optional sign, digits with single underscores between
// them. "1.5", "0x10" and "1e3" are rejected as int() rejects them. Values
// beyond int64 are rejected too (Python would accept them; no flag needs
// them).
func parsePyInt(s string) (int64, error) {
	t := strings.TrimFunc(s, unicode.IsSpace)
	body := t
	if body != "" && (body[0] == '+' || body[0] == '-') {
		body = body[1:]
	}
	if !digitsWithUnderscores(body) {
		return 0, errNotANumber
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(t, "_", ""), 10, 64)
	if err != nil {
		return 0, errNotANumber
	}
	return v, nil
}

// digitsWithUnderscores reports whether s is one or more ASCII digits with
// single underscores only between digits, Python's digit-group rule.
func digitsWithUnderscores(s string) bool {
	if s == "" {
		return false
	}
	prevDigit := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			prevDigit = true
		case c == '_' && prevDigit && i+1 < len(s):
			prevDigit = false
		default:
			return false
		}
	}
	return prevDigit
}

// parseHumanReadableInt is vLLM's human_readable_int, used for dotted
// values that are not JSON: "1k" = 1000, "25.6k" = 25600, "1K" = 1024;
// decimals with binary suffixes are refused; otherwise int(value).
func parseHumanReadableInt(s string) (int64, bool) {
	t := strings.TrimFunc(s, unicode.IsSpace)
	if n := len(t); n >= 2 {
		number, suffix := t[:n-1], t[n-1]
		if isPlainDecimal(number) {
			decimal := map[byte]float64{'k': 1e3, 'm': 1e6, 'g': 1e9, 't': 1e12}
			binary := map[byte]int64{'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}
			if mult, ok := decimal[suffix]; ok {
				f, err := strconv.ParseFloat(number, 64)
				if err != nil {
					return 0, false
				}
				return int64(f * mult), true
			}
			if mult, ok := binary[suffix]; ok {
				n, err := strconv.ParseInt(number, 10, 64)
				if err != nil {
					return 0, false
				}
				return n * mult, true
			}
		}
	}
	v, err := parsePyInt(t)
	return v, err == nil
}

// isPlainDecimal matches `\d+(\.\d+)?`.
func isPlainDecimal(s string) bool {
	whole, frac, hasPoint := strings.Cut(s, ".")
	allDigits := func(p string) bool {
		if p == "" {
			return false
		}
		for i := 0; i < len(p); i++ {
			if p[i] < '0' || p[i] > '9' {
				return false
			}
		}
		return true
	}
	return allDigits(whole) && (!hasPoint || allDigits(frac))
}
