package py

import "fmt"

// UsageError is an argparse error: the command prints the usage line and
// "PROG: error: " + Msg to stderr and exits 2, as argparse's parser.error
// does. Checks made after parsing that Python makes in argparse (a choice,
// a flag that is not built) raise it too, from any package.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// UsageErrorf is a usage error with a formatted message.
func UsageErrorf(format string, args ...any) *UsageError {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}
