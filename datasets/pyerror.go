package datasets

// PythonError is an error whose text is, word for word, the message the
// Python tool raises in the same situation; Type names the Python exception
// class ("ValueError", "IndexError", ...) so a caller can print it the way
// Python's traceback ends: "ValueError: <message>".
type PythonError struct {
	Type string
	Msg  string
}

func (e *PythonError) Error() string { return e.Msg }

// valueError is a *PythonError of class ValueError.
func valueError(msg string) error { return &PythonError{Type: "ValueError", Msg: msg} }
