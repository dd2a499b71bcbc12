// Package py writes values in Python's text forms and reads numbers as
// Python parses them: repr of a float and of a str, str.format's
// alignment and "{:.Nf}", float(s), str.isspace, an insertion-ordered
// dict, and json.dumps. stampede's messages, console block, JSON files,
// request bodies and chat templates must read byte for byte as vLLM's
// Python writes them, so these follow CPython rather than strconv, fmt
// or encoding/json. Every package that prints a Python form uses this one.
package py
