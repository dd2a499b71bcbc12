package py

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// FloatRepr formats f as Python's repr(f) (and str(f), the same in
// Python 3): the shortest digits that round-trip, in positional notation
// when the decimal exponent e (of d.ddd×10^e) satisfies -4 ≤ e < 16, with
// ".0" added to integral values; otherwise in exponent notation with at
// least two exponent digits and no ".0" ("1e-05", "1e+16", "1.5e+300").
// Infinities and NaN are "inf", "-inf" and "nan".
func FloatRepr(f float64) string {
	var buf [32]byte
	return string(AppendFloatRepr(buf[:0], f))
}

// AppendFloatRepr appends FloatRepr(f) to dst without allocating
// (beyond growing dst), for encoders of long float lists.
func AppendFloatRepr(dst []byte, f float64) []byte {
	if s, ok := pyNonFinite(f); ok {
		return append(dst, s...)
	}
	// 'e' with precision -1 gives the shortest round-trip digits:
	// [-]d[.ddd]e±XX.
	var buf [32]byte
	sci := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	if sci[0] == '-' {
		dst = append(dst, '-')
		sci = sci[1:]
	}
	e := bytes.IndexByte(sci, 'e')
	mant := sci[:e]
	exp := 0
	for _, c := range sci[e+2:] {
		exp = exp*10 + int(c-'0')
	}
	if sci[e+1] == '-' {
		exp = -exp
	}

	if exp < -4 || exp >= 16 {
		dst = append(dst, mant...)
		dst = append(dst, 'e')
		if exp < 0 {
			dst, exp = append(dst, '-'), -exp
		} else {
			dst = append(dst, '+')
		}
		if exp < 10 {
			dst = append(dst, '0')
		}
		return strconv.AppendInt(dst, int64(exp), 10)
	}
	// Positional: the digits without the point, which goes after
	// exp+1 of them, zero-padded on either side.
	var digitBuf [24]byte
	digits := append(digitBuf[:0], mant[0])
	if len(mant) > 2 {
		digits = append(digits, mant[2:]...)
	}
	point := exp + 1
	switch {
	case point <= 0:
		dst = append(dst, "0."...)
		for range -point {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	case point >= len(digits):
		dst = append(dst, digits...)
		for range point - len(digits) {
			dst = append(dst, '0')
		}
		return append(dst, ".0"...)
	default:
		dst = append(dst, digits[:point]...)
		dst = append(dst, '.')
		return append(dst, digits[point:]...)
	}
}

// Fixed formats f as Python's "{:.Nf}" with N = prec: rounded half to
// even on the exact binary value (Go's strconv rounds the exact value too,
// so 2.675 gives "2.67" and 0.125 gives "0.12"), with Python's spellings
// "inf", "-inf" and "nan".
func Fixed(f float64, prec int) string {
	if s, ok := pyNonFinite(f); ok {
		return s
	}
	return strconv.FormatFloat(f, 'f', prec, 64)
}

// pyNonFinite spells infinities and NaN as Python's str() and format do.
func pyNonFinite(f float64) (string, bool) {
	switch {
	case math.IsInf(f, 1):
		return "inf", true
	case math.IsInf(f, -1):
		return "-inf", true
	case math.IsNaN(f):
		return "nan", true
	}
	return "", false
}

// errFloatSyntax reports a string Python's float() rejects.
var errFloatSyntax = errors.New("not a number Python's float() accepts")

// ParseFloat parses s as Python's float(s) does: surrounding whitespace
// is ignored (Go's unicode.IsSpace set, which is float()'s; U+001C..U+001F
// are not stripped here, unlike str.strip()); an optional sign; "inf", "infinity" or "nan" in any case; or
// a decimal literal whose digit groups may be separated by single
// underscores ("1_000.5e-3"). Hexadecimal and other Go-only forms are
// rejected. Values beyond float64's range become ±Inf, as in Python.
func ParseFloat(s string) (float64, error) {
	t := strings.TrimFunc(s, unicode.IsSpace)
	body := strings.TrimLeft(t, "+-")
	if len(t)-len(body) > 1 {
		return 0, errFloatSyntax
	}
	negative := strings.HasPrefix(t, "-")
	switch strings.ToLower(body) {
	case "inf", "infinity":
		if negative {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	case "nan":
		return math.NaN(), nil
	}
	if !validDecimalLiteral(body) {
		return 0, errFloatSyntax
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(t, "_", ""), 64)
	var numErr *strconv.NumError
	if err != nil && !(errors.As(err, &numErr) && numErr.Err == strconv.ErrRange) {
		return 0, errFloatSyntax
	}
	return f, nil
}

// validDecimalLiteral checks Python's floatnumber grammar without sign:
// (digitpart ["." [digitpart]] | "." digitpart) [("e"|"E") ["+"|"-"] digitpart],
// digitpart = digit (["_"] digit)*.
func validDecimalLiteral(s string) bool {
	i := 0
	digitpart := func() bool {
		start := i
		for i < len(s) {
			c := s[i]
			switch {
			case c >= '0' && c <= '9':
				i++
			case c == '_' && i > start && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
				i++
			default:
				return i > start
			}
		}
		return i > start
	}
	intPart := digitpart()
	fracPart := false
	if i < len(s) && s[i] == '.' {
		i++
		fracPart = digitpart()
	}
	if !intPart && !fracPart {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digitpart() {
			return false
		}
	}
	return i == len(s)
}
