package datasets

import (
	"bufio"
	"bytes"
	"io"
)

// maxJSONLineBytes bounds one line of a JSON-lines dataset. Rows may carry
// base64 media inline, so the limit sits far above bufio's 64 KiB default.
const maxJSONLineBytes = 1 << 30

// jsonLines walks the rows of a JSON-lines file: each non-blank line,
// surrounding whitespace trimmed, with its 1-based line number. Blank lines
// are skipped, as pandas.read_json(lines=True) and Python's line loops skip
// them. Use it as bufio.Scanner: for l.next() { ... l.text ... }, then
// l.err().
type jsonLines struct {
	sc   *bufio.Scanner
	line int    // number of the current line, from 1
	text []byte // the current line, valid until the next call to next
}

func newJSONLines(r io.Reader) *jsonLines {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), maxJSONLineBytes)
	return &jsonLines{sc: sc}
}

// next advances to the next non-blank line; it returns false at the end
// of the input or on a read error.
func (l *jsonLines) next() bool {
	for l.sc.Scan() {
		l.line++
		if l.text = bytes.TrimSpace(l.sc.Bytes()); len(l.text) > 0 {
			return true
		}
	}
	return false
}

// err is the read error that stopped next, nil at a clean end.
func (l *jsonLines) err() error { return l.sc.Err() }
