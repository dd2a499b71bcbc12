// Package pyfmt spells values as Python prints them and reads numbers as
// Python parses them: repr of a float and of a str, "{:.Nf}", float(s) and
// str.isspace. stampede's messages, console block and JSON files must read
// byte for byte as `vllm bench serve` writes them, so these follow CPython
// rather than strconv or fmt. Metrics, datasets and the bench front end all
// use them, which is why they live apart from each.
package pyfmt
