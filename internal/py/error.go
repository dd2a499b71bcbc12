package py

import "fmt"

// Error is an exception Python raises: Type is its class ("ValueError",
// "KeyError", ...) and Msg its message, so that a command can end as
// Python's traceback does, "ValueError: <message>", and exit 1. Msg starts
// with Python's text word for word; it may go on in parentheses with what
// Python leaves out (the file and line, what would be accepted).
type Error struct {
	Type string
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// NewError is the exception of class typ with message msg.
func NewError(typ, msg string) *Error { return &Error{Type: typ, Msg: msg} }

// ValueErrorf is a ValueError whose message is formatted as fmt.Sprintf.
func ValueErrorf(format string, args ...any) *Error {
	return &Error{Type: "ValueError", Msg: fmt.Sprintf(format, args...)}
}
