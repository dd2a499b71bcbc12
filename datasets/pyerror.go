package datasets

import "fmt"

// PythonError is an error whose text starts with, word for word, the
// message the Python tool raises in the same situation, and may go on in
// parentheses with what Python leaves out (the file and line, what would
// be accepted); Type names the Python exception
// class ("ValueError", "IndexError", ...) so a caller can print it the way
// Python's traceback ends: "ValueError: <message>".
type PythonError struct {
	Type string
	Msg  string
}

func (e *PythonError) Error() string { return e.Msg }

// withPlace adds the file and line a *PythonError is about to its
// message, after Python's text, which stays as it is.
func withPlace(err error, path string, line int) error {
	if pe, ok := err.(*PythonError); ok {
		return &PythonError{Type: pe.Type, Msg: fmt.Sprintf("%s (%s line %d)", pe.Msg, path, line)}
	}
	return fmt.Errorf("%s line %d: %w", path, line, err)
}

// valueError is a *PythonError of class ValueError.
func valueError(msg string) error { return &PythonError{Type: "ValueError", Msg: msg} }
