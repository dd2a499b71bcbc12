package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/internal/py"
)

// JSONObject is a JSON object whose values are JSON text, in Python dict
// order: first insertion fixes a key's position, a later value for the
// same key replaces the value in place. Request bodies built from it list
// keys as vLLM's client would. Like a map, a copy shares its entries;
// Clone makes one that does not.
type JSONObject struct {
	py.Dict[string, json.RawMessage]
}

// Merge sets every member of other over o, Python's {**o, **other}.
func (o *JSONObject) Merge(other JSONObject) { o.Update(&other.Dict) }

// Clone returns a copy of o that changes apart from it.
func (o *JSONObject) Clone() JSONObject { return JSONObject{o.Copy()} }

// MarshalJSON writes the object compactly, keys in order.
func (o JSONObject) MarshalJSON() ([]byte, error) { return o.encode(",", ":", false), nil }

// EncodePy writes the object as Python's json.dumps does: ", " and ": "
// separators, keys with ensure_ascii escaping. Values are written as
// stored, so a request body holds them already in json.dumps form.
func (o JSONObject) EncodePy() []byte { return o.encode(", ", ": ", true) }

func (o JSONObject) encode(itemSep, keySep string, ensureASCII bool) []byte {
	n := 2
	for key, value := range o.All() {
		n += len(key) + len(value) + 6
	}
	var b bytes.Buffer
	b.Grow(n)
	b.WriteByte('{')
	first := true
	for key, value := range o.All() {
		if !first {
			b.WriteString(itemSep)
		}
		first = false
		py.AppendJSONString(&b, key, ensureASCII)
		b.WriteString(keySep)
		if len(value) == 0 {
			b.WriteString("null")
		} else {
			b.Write(value)
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// JSONText is an option value that argparse passes through json.loads:
// the value re-encoded compactly with Python's semantics applied
// (duplicate keys: last value, first position). nil means the option was
// not given.
type JSONText []byte

// UnmarshalFlag parses s as Python's json.loads would; the command line
// stores the option through it.
func (t *JSONText) UnmarshalFlag(s string) error {
	n, err := py.Loads(s)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	n.Encode(&b)
	*t = b.Bytes()
	return nil
}

// Object returns the value as an ordered object; ok is false when the
// value is not a JSON object.
func (t JSONText) Object() (obj JSONObject, ok bool) {
	n, err := py.Loads(string(t))
	if err != nil || n.Kind != py.JSONObject {
		return obj, false
	}
	for key, value := range n.Members.All() {
		var b bytes.Buffer
		value.Encode(&b)
		obj.Set(key, b.Bytes())
	}
	return obj, true
}

// AddrList is a list of IP addresses (--source-addresses), in the order
// given, without repeats.
type AddrList []netip.Addr

// maxAddrRange bounds one range of an AddrList: a typo such as
// 10.0.0.1-10.9.0.1 should not become millions of addresses.
const maxAddrRange = 1 << 16

// UnmarshalFlag parses comma-separated addresses and ranges of them
// ("127.0.0.2-127.0.0.9", both ends included, of one family). The command
// line stores --source-addresses through it.
func (l *AddrList) UnmarshalFlag(s string) error {
	var out AddrList
	seen := map[netip.Addr]bool{}
	add := func(a netip.Addr) {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := netip.ParseAddr(lo)
		if err != nil || first.Zone() != "" {
			return fmt.Errorf("malformed address %q: want an IP address such as 127.0.0.2, or a range such as 127.0.0.2-127.0.0.9", part)
		}
		first = first.Unmap()
		if !isRange {
			add(first)
			continue
		}
		last, err := netip.ParseAddr(hi)
		if err != nil || last.Zone() != "" {
			return fmt.Errorf("malformed address range %q: want two IP addresses joined by '-'", part)
		}
		last = last.Unmap()
		if first.Is4() != last.Is4() || last.Less(first) {
			return fmt.Errorf("address range %q: want its ends of one family, the first not after the last", part)
		}
		n := 0
		for a := first; ; a = a.Next() {
			if n++; n > maxAddrRange {
				return fmt.Errorf("address range %q is too large (more than %d addresses)", part, maxAddrRange)
			}
			add(a)
			if a == last {
				break
			}
		}
	}
	*l = out
	return nil
}

// CPUList is a Linux CPU list ("0-3,6"), ascending and without repeats.
type CPUList []int

// UnmarshalFlag parses a CPU list as the kernel writes them in
// /sys/devices/system/cpu/online: comma-separated CPUs and ranges. The
// command line stores --cpus through it.
func (l *CPUList) UnmarshalFlag(s string) error {
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		first, err := strconv.Atoi(lo)
		if err != nil || first < 0 {
			return fmt.Errorf("malformed CPU %q", part)
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil || last < first {
				return fmt.Errorf("malformed CPU range %q", part)
			}
		}
		if last-first > 1<<16 {
			return fmt.Errorf("CPU range %q is too large", part)
		}
		for c := first; c <= last; c++ {
			seen[c] = true
		}
	}
	out := make(CPUList, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	slices.Sort(out)
	*l = out
	return nil
}
