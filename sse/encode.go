package sse

// Encoders for the mock server. Each appends to dst and returns the extended
// slice.

// AppendData appends one event carrying payload as a single "data: " line,
// terminated by the blank line: "data: <payload>\n\n". The payload must not
// contain a newline (JSON chunks never do).
func AppendData(dst, payload []byte) []byte {
	dst = append(dst, "data: "...)
	dst = append(dst, payload...)
	return append(dst, "\n\n"...)
}

// AppendDone appends the "data: [DONE]\n\n" event that ends an OpenAI stream.
func AppendDone(dst []byte) []byte { return append(dst, "data: [DONE]\n\n"...) }

// AppendComment appends a comment line (": text\n\n"), which servers use as a
// keep-alive ping; clients ignore it.
func AppendComment(dst []byte, text string) []byte {
	dst = append(dst, ": "...)
	dst = append(dst, text...)
	return append(dst, "\n\n"...)
}
