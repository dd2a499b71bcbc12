package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// JSONProblem says in a user's words what is wrong with data, which
// encoding/json refused with err while reading it as want (e.g. "a JSON
// object"): where the JSON breaks and how, or which field holds which
// kind of value instead of what. It never shows Go type names.
func JSONProblem(data []byte, err error, want string) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		// A json.Decoder's word for a value the input cut off.
		return fmt.Sprintf("the JSON ends early (an unclosed bracket, brace or string?); want %s", want)
	case errors.As(err, &syntax):
		where := jsonPosition(data, syntax.Offset)
		msg := syntax.Error()
		switch {
		case msg == "unexpected end of JSON input":
			return fmt.Sprintf("the JSON ends early (an unclosed bracket, brace or string?); want %s", want)
		case strings.HasPrefix(msg, "invalid character "):
			// "invalid character 'x' looking for beginning of value"
			return fmt.Sprintf("not valid JSON at %s: %s; want %s", where, strings.TrimPrefix(msg, "invalid "), want)
		}
		return fmt.Sprintf("not valid JSON at %s: %s; want %s", where, msg, want)
	case errors.As(err, &typ):
		found := jsonKindName(typ.Value)
		if typ.Field == "" {
			return fmt.Sprintf("found %s; want %s", found, want)
		}
		return fmt.Sprintf("field %q must be %s, found %s", typ.Field, jsonFieldWant(typ), found)
	}
	return fmt.Sprintf("%v; want %s", err, want)
}

// jsonPosition is the place of the byte a parser stopped at, offset bytes
// into data (so the byte at offset-1), as a 1-based line and column when
// data has several lines, else as a column.
func jsonPosition(data []byte, offset int64) string {
	if offset < 1 || offset > int64(len(data)) {
		return fmt.Sprintf("byte %d", offset)
	}
	before := data[:offset-1]
	line := 1 + strings.Count(string(before), "\n")
	col := len(before) - strings.LastIndexByte(string(before), '\n')
	if line == 1 && !strings.Contains(string(data), "\n") {
		return fmt.Sprintf("column %d", col)
	}
	return fmt.Sprintf("line %d, column %d", line, col)
}

// jsonKindName names a JSON value kind as encoding/json reports it
// ("object", "array", "number", "string", "bool", "number 1.5") with an
// article.
func jsonKindName(v string) string {
	switch {
	case v == "object", v == "array":
		return "an " + v
	case v == "bool":
		return "true or false"
	case strings.HasPrefix(v, "number "):
		return "the number " + strings.TrimPrefix(v, "number ")
	}
	return "a " + v
}

// jsonFieldWant is the JSON kind the Go type behind a field reads.
func jsonFieldWant(e *json.UnmarshalTypeError) string {
	if e.Type == nil {
		return "another kind of value"
	}
	switch e.Type.Kind().String() {
	case "string":
		return "a string"
	case "slice", "array":
		return "a list"
	case "map", "struct":
		return "an object"
	case "bool":
		return "true or false"
	case "float32", "float64":
		return "a number"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "a whole number"
	}
	return "another kind of value"
}
