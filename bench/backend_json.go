package bench

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

// pyJSONRaw is json.dumps(json.loads(raw)): any JSON text re-encoded the
// way Python would send it after parsing it, key order kept, numbers with
// a fraction or exponent as float repr ("1e3" → 1000.0), integers as
// written ("-0" → 0), NaN/Infinity literals kept.
func pyJSONRaw(raw []byte) ([]byte, error) {
	n, err := py.Loads(string(raw))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(raw) + len(raw)/8)
	n.EncodePy(&b)
	return b.Bytes(), nil
}
