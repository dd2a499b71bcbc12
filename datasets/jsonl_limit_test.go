package datasets

import (
	"bufio"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
)

// TestJSONLinesLimit: rows up to the limit are read; the first longer
// line stops the walk with its number, and no cut-off part of it is
// handed out as a row.
func TestJSONLinesLimit(t *testing.T) {
	const limit = 16
	tests := []struct {
		name  string
		input string
		rows  []string
		line  int // 0: no error
	}{
		{"within", "{\"a\":1}\n\n" + strings.Repeat("x", limit) + "\n", []string{`{"a":1}`, strings.Repeat("x", limit)}, 0},
		{"CRLF at the limit", strings.Repeat("x", limit-1) + "\r\n", []string{strings.Repeat("x", limit-1)}, 0},
		{"last line without newline", "a\n" + strings.Repeat("x", limit), []string{"a", strings.Repeat("x", limit)}, 0},
		{"long third line", "a\n\n" + strings.Repeat("x", limit+1) + "\nb\n", []string{"a"}, 3},
		{"long last line", "a\n" + strings.Repeat("x", 10*limit), []string{"a"}, 2},
		{"long first line", strings.Repeat("y", 100*limit) + "\n", nil, 1},
	}
	for _, tt := range tests {
		for _, slow := range []bool{false, true} {
			var r io.Reader = strings.NewReader(tt.input)
			if slow {
				r = iotest.OneByteReader(r)
			}
			l := newJSONLinesLimit(r, limit)
			var rows []string
			for l.next() {
				rows = append(rows, string(l.text))
			}
			err := l.err()
			var long *LineTooLongError
			switch {
			case tt.line == 0 && err != nil:
				t.Errorf("%s: %v", tt.name, err)
			case tt.line != 0 && (!errors.As(err, &long) || long.Line != tt.line || long.Limit != limit):
				t.Errorf("%s (slow %v): error %v, want line %d too long", tt.name, slow, err, tt.line)
			}
			if strings.Join(rows, "|") != strings.Join(tt.rows, "|") {
				t.Errorf("%s (slow %v): rows %q, want %q", tt.name, slow, rows, tt.rows)
			}
		}
	}
}

// TestLineLimiterMatchesLines compares the limiter with a plain split on
// random inputs read in random chunks: it fails exactly when a line is
// longer than the limit, naming the first such line, and passes every
// byte before that line's excess unchanged.
func TestLineLimiterMatchesLines(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		limit := 1 + rng.IntN(20)
		var b strings.Builder
		for range rng.IntN(8) {
			b.WriteString(strings.Repeat("z", rng.IntN(limit+3)))
			b.WriteByte('\n')
		}
		if rng.IntN(2) == 0 {
			b.WriteString(strings.Repeat("z", rng.IntN(limit+3)))
		}
		input := b.String()
		wantLine, wantBytes := 0, len(input)
		offset := 0
		for i, line := range strings.Split(input, "\n") {
			if len(line) > limit {
				wantLine, wantBytes = i+1, offset+limit
				break
			}
			offset += len(line) + 1
		}
		got, err := io.ReadAll(bufio.NewReaderSize(iotest.HalfReader(newLineLimiter(strings.NewReader(input), limit)), 16))
		var long *LineTooLongError
		if wantLine == 0 {
			if err != nil || string(got) != input {
				t.Fatalf("limit %d %q: read %q, %v", limit, input, got, err)
			}
			continue
		}
		if !errors.As(err, &long) || long.Line != wantLine || string(got) != input[:wantBytes] {
			t.Fatalf("limit %d %q: read %q, %v; want %q and line %d too long", limit, input, got, err, input[:wantBytes], wantLine)
		}
	}
}
