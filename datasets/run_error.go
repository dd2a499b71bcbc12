package datasets

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/stampede-bench/stampede/internal/py"
)

// RunError is the exception Python raises for a dataset's failure: a
// Python exception stays as it is, a file that cannot be opened is named
// with the flag it came from (--dataset-path when it is that path).
func RunError(name string, err error, path string) error {
	var pe *py.Error
	if errors.As(err, &pe) {
		return pe
	}
	var fe *fs.PathError
	if errors.As(err, &fe) {
		typ, where := "OSError", fe.Path
		if errors.Is(fe.Err, fs.ErrNotExist) {
			typ = "FileNotFoundError"
		}
		if fe.Path == path {
			where = "--dataset-path " + fe.Path
		}
		return &py.Error{Type: typ, Msg: fmt.Sprintf("dataset %s: %s: %v", name, where, fe.Err)}
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "dataset ") {
		msg = fmt.Sprintf("dataset %s: %s", name, msg)
	}
	return &py.Error{Type: "ValueError", Msg: msg}
}
