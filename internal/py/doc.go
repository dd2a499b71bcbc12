// Package py writes values in Python's text forms and reads numbers as
// Python parses them: repr of None, bool, int, float, str, list, tuple
// and dict; bool(); str.format's alignment and "{:.Nf}"; str.center;
// float(s) and str.isspace; an insertion-ordered dict; json.dumps with
// its keyword arguments; and Error, an exception Python raises (its class
// and message), the one type every package returns for one. stampede's messages, console block, JSON
// files, request bodies and chat templates must read byte for byte as
// vLLM's Python writes them, so these follow CPython rather than
// strconv, fmt or encoding/json. Every package that prints a Python form
// uses this one.
package py
