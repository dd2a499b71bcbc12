package report

import "strings"

// The run's outputs are written one after another, and one that cannot be
// written does not keep the rest from it.

// Saved collects what the outputs after a run wrote and what failed:
// one file that cannot be written does not keep the others from being
// written, and the error names those that were.
type Saved struct {
	written []string
	errs    []error
}

// Add records path as written, or err as its failure.
func (f *Saved) Add(path string, err error) {
	if err != nil {
		f.Fail(err)
		return
	}
	f.written = append(f.written, path)
}

func (f *Saved) Fail(err error) { f.errs = append(f.errs, err) }

// Written is the paths written, in order.
func (f *Saved) Written() []string { return f.written }

// Err is nil when every output was written, else the failures and the
// files written beside them.
func (f *Saved) Err() error {
	if len(f.errs) == 0 {
		return nil
	}
	return &SaveError{errs: f.errs, written: f.written}
}

// SaveError is the failures of a run's outputs, with the files that were
// written all the same.
type SaveError struct {
	errs    []error
	written []string
}

func (e *SaveError) Error() string {
	msgs := make([]string, len(e.errs))
	for i, err := range e.errs {
		msgs[i] = err.Error()
	}
	done := "no other file was written"
	if len(e.written) > 0 {
		done = "written: " + strings.Join(e.written, ", ")
	}
	return strings.Join(msgs, "; ") + " (" + done + ")"
}

func (e *SaveError) Unwrap() []error { return e.errs }
