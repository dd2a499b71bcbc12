package backend

import (
	"bytes"

	"github.com/stampede-bench/stampede/internal/py"
)

// pyString is json.dumps(s).
func pyString(s string) []byte {
	var b bytes.Buffer
	b.Grow(len(s) + 2)
	py.AppendJSONString(&b, s, true)
	return b.Bytes()
}

// pyStringList is json.dumps(list_of_str).
func pyStringList(ss []string) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, s := range ss {
		if i > 0 {
			b.WriteString(", ")
		}
		py.AppendJSONString(&b, s, true)
	}
	b.WriteByte(']')
	return b.Bytes()
}
