package plan

import (
	"slices"
	"testing"
)

func TestOrigin(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"http://127.0.0.1:8000", "http://127.0.0.1:8000"},
		{"http://Host.Example/v1/completions?x=1", "http://host.example:80"},
		{"HTTPS://u:p@h", "https://h:443"},
		{"http://[::1]:9000/", "http://[::1]:9000"},
		{"ftp://h", ""},
		{"h:8000", ""},
		{"", ""},
	} {
		got, ok := Origin(c.in)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("Origin(%q) = %q, %v; want %q", c.in, got, ok, c.want)
		}
	}
	p := &Plan{BaseURL: "http://a:8000", FrontEndURLs: []string{"http://a:8000/v1/completions", "http://b:8000/v1/completions"},
		ScrapeURL: "http://c:9090/metrics"}
	if got := p.Origins(); !slices.Equal(got, []string{"http://a:8000", "http://b:8000", "http://c:9090"}) {
		t.Errorf("Origins = %q", got)
	}
}
