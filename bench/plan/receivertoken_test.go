package plan

import "testing"

// TestReceiverTokenHeader: a b64token is a bearer token; anything else is
// NAME=VALUE or NAME: VALUE, or an error naming the flag.
func TestReceiverTokenHeader(t *testing.T) {
	for _, c := range []struct{ in, name, value string }{
		{"s3cret", "Authorization", "Bearer s3cret"},
		{"abc+/def==", "Authorization", "Bearer abc+/def=="},
		{"authorization=Bearer s3cret", "authorization", "Bearer s3cret"},
		{"x-otlp-token=a=b", "x-otlp-token", "a=b"},
		{"X-Api-Key: k", "X-Api-Key", "k"},
		{"two words", "", ""},
		{"=x", "", ""},
		{"a b=c", "", ""},
		{"name=", "Authorization", "Bearer name="}, // a b64token may end in =
		{"name: ", "", ""},
		{"", "", ""},
	} {
		name, value, err := ReceiverTokenHeader(c.in)
		if name != c.name || value != c.value || (err != nil) != (c.name == "") {
			t.Errorf("ReceiverTokenHeader(%q) = %q, %q, %v; want %q, %q", c.in, name, value, err, c.name, c.value)
		}
	}
}
