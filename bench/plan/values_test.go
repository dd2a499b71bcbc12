package plan

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestJSONObject(t *testing.T) {
	var o JSONObject
	o.Set("b", json.RawMessage(`1`))
	o.Set("a", json.RawMessage(`2`))
	var other JSONObject
	other.Set("b", json.RawMessage(`"x"`))
	other.Set("c", nil)
	o.Merge(other)
	got, _ := json.Marshal(o)
	if string(got) != `{"b":"x","a":2,"c":null}` {
		t.Errorf("JSONObject = %s", got)
	}
	if v, ok := o.Get("a"); !ok || string(v) != "2" {
		t.Errorf("Get(a) = %s, %v", v, ok)
	}
	if _, ok := o.Get("z"); ok {
		t.Error("Get(z) found a value")
	}
}

func TestJSONTextParsing(t *testing.T) {
	good := map[string]string{
		`{"a": 1, "a": 2}`:           `{"a":2}`,
		` [1, -0.5e+3, "\u00e9\n"] `: `[1,-0.5e+3,"é\n"]`,
		`"\ud83d\ude00"`:             `"😀"`,
		`-Infinity`:                  `-Infinity`,
		`{"k": {"x": [true, null]}}`: `{"k":{"x":[true,null]}}`,
		`"<&>"`:                      `"<&>"`,
	}
	for in, want := range good {
		var v JSONText
		if err := v.UnmarshalFlag(in); err != nil || string(v) != want {
			t.Errorf("JSONText(%q) = %s, %v; want %s", in, v, err, want)
		}
	}
	for _, in := range []string{"", "{", "[1,]", "{'a': 1}", "01", "1.", `"\x"`, "nan", "{\"a\" 1}", "\"a\tb\"", "1 2", strings.Repeat("[", 2000)} {
		var v JSONText
		if err := v.UnmarshalFlag(in); err == nil {
			t.Errorf("JSONText(%q) accepted as %s", in, v)
		}
	}
}

// FuzzJSONText checks the json.loads reader never panics and that its
// compact re-encoding is a fixed point.
func FuzzJSONText(f *testing.F) {
	for _, seed := range []string{`{"a": [1, 2.5e3, "x\u00e9"], "a": null}`, `NaN`, `-Infinity`, `"\ud800"`, `[[[]]]`, `{"":{}}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var once JSONText
		if err := once.UnmarshalFlag(s); err != nil {
			return
		}
		var twice JSONText
		if err := twice.UnmarshalFlag(string(once)); err != nil {
			t.Fatalf("re-encoding %q of %q does not parse: %v", once, s, err)
		}
		if string(once) != string(twice) {
			t.Fatalf("re-encoding is not stable: %q then %q", once, twice)
		}
	})
}

func TestCPUList(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		err  bool
	}{
		{in: "0", want: []int{0}},
		{in: "0-3,6", want: []int{0, 1, 2, 3, 6}},
		{in: "6, 2-3,2", want: []int{2, 3, 6}},
		{in: "3-1", err: true},
		{in: "a", err: true},
		{in: "-1", err: true},
		{in: "", err: true},
		{in: "0-", err: true},
	}
	for _, tt := range tests {
		var l CPUList
		err := l.UnmarshalFlag(tt.in)
		if (err != nil) != tt.err {
			t.Errorf("CPUList(%q) error = %v, want error %v", tt.in, err, tt.err)
			continue
		}
		if !tt.err && !slices.Equal(l, tt.want) {
			t.Errorf("CPUList(%q) = %v, want %v", tt.in, l, tt.want)
		}
	}
}

func TestAddrList(t *testing.T) {
	tests := []struct {
		in, want string // want: the addresses joined by spaces
		err      string // a part of the error; "" for none
	}{
		{in: "127.0.0.2", want: "127.0.0.2"},
		{in: "127.0.0.2-127.0.0.4", want: "127.0.0.2 127.0.0.3 127.0.0.4"},
		{in: "10.0.0.5, 10.0.0.4,10.0.0.5", want: "10.0.0.5 10.0.0.4"},
		{in: "10.0.0.255-10.0.1.1", want: "10.0.0.255 10.0.1.0 10.0.1.1"},
		{in: "::1,fd00::1-fd00::2", want: "::1 fd00::1 fd00::2"},
		{in: "::ffff:127.0.0.2", want: "127.0.0.2"},
		{in: "127.0.0.4-127.0.0.2", err: "first not after the last"},
		{in: "127.0.0.2-::1", err: "one family"},
		{in: "10.0.0.0-10.2.0.0", err: "too large"},
		{in: "127.0.0.x", err: `malformed address "127.0.0.x"`},
		{in: "127.0.0.2-", err: "malformed address range"},
		{in: "", err: "malformed address"},
	}
	for _, tt := range tests {
		var l AddrList
		err := l.UnmarshalFlag(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("AddrList(%q) error = %v, want one saying %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("AddrList(%q): %v", tt.in, err)
			continue
		}
		got := make([]string, len(l))
		for i, a := range l {
			got[i] = a.String()
		}
		if g := strings.Join(got, " "); g != tt.want {
			t.Errorf("AddrList(%q) = %s, want %s", tt.in, g, tt.want)
		}
	}
}
