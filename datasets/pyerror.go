package datasets

import (
	"fmt"

	"github.com/stampede-bench/stampede/internal/py"
)

// An error whose text Python defines is a *py.Error: its message starts
// with, word for word, the message the Python tool raises in the same
// situation, and may go on in parentheses with what Python leaves out (the
// file and line, what would be accepted); its Type names the Python
// exception class ("ValueError", "IndexError", ...) so a caller can print
// it the way Python's traceback ends: "ValueError: <message>".

// withPlace adds the file and line a *py.Error is about to its message,
// after Python's text, which stays as it is.
func withPlace(err error, path string, line int) error {
	if pe, ok := err.(*py.Error); ok {
		return py.NewError(pe.Type, fmt.Sprintf("%s (%s line %d)", pe.Msg, path, line))
	}
	return fmt.Errorf("%s line %d: %w", path, line, err)
}

// valueError is a *py.Error of class ValueError.
func valueError(msg string) error { return py.NewError("ValueError", msg) }
