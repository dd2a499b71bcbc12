package bench

import "bytes"

// pyObject is a request payload under construction: members in Python
// dict order, each value already in json.dumps form.
type pyObject []pyMember

type pyMember struct {
	key   string
	value []byte
}

// set is dict assignment: an existing key keeps its position.
func (o *pyObject) set(key string, value []byte) {
	for i := range *o {
		if (*o)[i].key == key {
			(*o)[i].value = value
			return
		}
	}
	*o = append(*o, pyMember{key, value})
}

// encode writes the object as json.dumps does.
func (o pyObject) encode() []byte {
	n := 2
	for _, m := range o {
		n += len(m.key) + len(m.value) + 6
	}
	var b bytes.Buffer
	b.Grow(n)
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteString(", ")
		}
		appendPyJSONString(&b, m.key)
		b.WriteString(": ")
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// pyString is json.dumps(s).
func pyString(s string) []byte {
	var b bytes.Buffer
	b.Grow(len(s) + 2)
	appendPyJSONString(&b, s)
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
		appendPyJSONString(&b, s)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// pyJSONRaw is json.dumps(json.loads(raw)): any JSON text re-encoded the
// way Python would send it after parsing it, key order kept, numbers with
// a fraction or exponent as float repr ("1e3" → 1000.0), integers as
// written ("-0" → 0), NaN/Infinity literals kept.
func pyJSONRaw(raw []byte) ([]byte, error) {
	n, err := parsePyJSON(string(raw))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(raw) + len(raw)/8)
	n.encodePy(&b)
	return b.Bytes(), nil
}
