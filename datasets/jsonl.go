package datasets

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// MaxLineBytes bounds one line of a line-oriented dataset file (JSON
// lines, CSV, traces). Rows may carry media inline, so the limit sits far
// above what text needs: a 4K PNG in base64 is ~30 MiB, a 30 s 16 kHz
// clip as a JSON sample array ~10 MiB. It is also what one row may cost
// in memory while it is read (about twice the limit, for the buffer's
// last growth): without a bound, a file with one 1.1 GB line took 2.16
// GB before failing. Media larger than this belongs in files that the
// row names by path.
const MaxLineBytes = 64 << 20

// LineTooLongError is a line of a dataset file longer than MaxLineBytes.
type LineTooLongError struct {
	Line  int // 1-based
	Limit int // bytes
}

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("line %d is longer than %d MiB, the most stampede reads as one row "+
		"(put large media in files the row names by path, or split the row)", e.Line, e.Limit>>20)
}

// lineLimiter passes r's bytes on until a line grows past limit bytes
// (its "\n" not counted), then fails with a *LineTooLongError naming it,
// so that nothing reading through it (bufio.Scanner, bufio.Reader,
// csv.Reader) ever holds more than one bounded line.
type lineLimiter struct {
	r      io.Reader
	limit  int
	line   int // number of the line being read, from 1
	inLine int // bytes of that line read so far
	err    error
}

func newLineLimiter(r io.Reader, limit int) *lineLimiter {
	return &lineLimiter{r: r, limit: limit, line: 1}
}

func (l *lineLimiter) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.r.Read(p)
	for i := 0; i < n; {
		nl := bytes.IndexByte(p[i:n], '\n')
		end := n
		if nl >= 0 {
			end = i + nl
		}
		if l.inLine+end-i > l.limit {
			l.err = &LineTooLongError{Line: l.line, Limit: l.limit}
			return i + l.limit - l.inLine, l.err
		}
		if nl < 0 {
			l.inLine += end - i
			break
		}
		l.line++
		l.inLine = 0
		i = end + 1
	}
	return n, err
}

// jsonLines walks the rows of a JSON-lines file: each non-blank line,
// surrounding whitespace trimmed, with its 1-based line number. Blank lines
// are skipped, as pandas.read_json(lines=True) and Python's line loops skip
// them. Lines are bounded by MaxLineBytes. Use it as bufio.Scanner: for
// l.next() { ... l.text ... }, then l.err().
type jsonLines struct {
	sc    *bufio.Scanner
	limit int
	line  int    // number of the current line, from 1
	text  []byte // the current line, valid until the next call to next
}

func newJSONLines(r io.Reader) *jsonLines {
	return newJSONLinesLimit(r, MaxLineBytes)
}

func newJSONLinesLimit(r io.Reader, limit int) *jsonLines {
	sc := bufio.NewScanner(newLineLimiter(r, limit))
	// The limiter fails a line before the scanner's buffer could fill:
	// room for the longest line, its "\r\n", and slack.
	sc.Buffer(make([]byte, 0, min(limit, 64<<10)), limit+64)
	return &jsonLines{sc: sc, limit: limit}
}

// next advances to the next non-blank line; it returns false at the end
// of the input or on a read error.
func (l *jsonLines) next() bool {
	for l.sc.Scan() {
		if l.sc.Err() != nil {
			// A read error (a line past the limit) ends the input; what the
			// scanner hands over with it is a cut line, not a row.
			return false
		}
		l.line++
		if l.text = bytes.TrimSpace(l.sc.Bytes()); len(l.text) > 0 {
			return true
		}
	}
	return false
}

// err is the read error that stopped next, nil at a clean end; a line
// past the limit is a *LineTooLongError.
func (l *jsonLines) err() error {
	err := l.sc.Err()
	if errors.Is(err, bufio.ErrTooLong) {
		return &LineTooLongError{Line: l.line + 1, Limit: l.limit}
	}
	return err
}
