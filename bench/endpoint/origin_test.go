package endpoint

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stampede-bench/stampede/bench/internal/benchtest"
)

// seen records the headers of every request a test server got.
type seen struct {
	mu  sync.Mutex
	got []http.Header
}

func (s *seen) handler(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.got = append(s.got, r.Header.Clone())
		s.mu.Unlock()
		if next != nil {
			next(w, r)
		}
	}
}

func (s *seen) all() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got
}

// TestCredentialsStayWithTheirOrigin: two servers on different ports of
// one host. The base URL's origin gets --header's pairs and the URL's
// Basic authentication; the other, scraped with --server-metrics, gets
// neither, only --server-metrics-header's, and a redirect from the base
// origin to the other carries nothing of the base's.
func TestCredentialsStayWithTheirOrigin(t *testing.T) {
	var other seen
	otherSrv := httptest.NewServer(other.handler(nil))
	defer otherSrv.Close()
	var base seen
	baseSrv := httptest.NewServer(base.handler(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/jump" {
			http.Redirect(w, r, otherSrv.URL+"/landed", http.StatusFound)
		}
	}))
	defer baseSrv.Close()

	baseURL := strings.Replace(baseSrv.URL, "http://", "http://alice:pw@", 1)
	c, err := benchtest.ParseArgs([]string{"--model", "m", "--base-url", baseURL,
		"--header", "X-Api-Key=base-secret", "X-Trace=1",
		"--server-metrics", otherSrv.URL + "/metrics", "--server-metrics-header", "X-Scrape-Key=scrape-secret"}, benchtest.NoEnv)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	get := func(url string, hs map[string]string) {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hs {
			req.Header.Set(k, v)
		}
		resp, err := s.Control().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	asMap := func(url string) map[string]string {
		m := map[string]string{}
		for _, h := range s.HeadersFor(url) {
			m[h.Key] = h.Value
		}
		return m
	}

	scrape := map[string]string{}
	for _, h := range s.ScrapeHeaders() {
		scrape[h.Key] = h.Value
	}
	get(c.ServerMetricsURL(), scrape)
	get(otherSrv.URL+"/v1/models", asMap(otherSrv.URL+"/v1/models"))
	get(c.BaseURL+"/v1/models", asMap(c.BaseURL+"/v1/models"))
	get(c.BaseURL+"/jump", asMap(c.BaseURL+"/jump"))

	bs := base.all()
	if len(bs) != 2 {
		t.Fatalf("base origin got %d requests, want 2", len(bs))
	}
	for _, h := range bs {
		if h.Get("Authorization") != "Basic YWxpY2U6cHc=" || h.Get("X-Api-Key") != "base-secret" || h.Get("X-Scrape-Key") != "" {
			t.Errorf("base origin's request: %v", h)
		}
	}
	os := other.all()
	if len(os) != 3 {
		t.Fatalf("other origin got %d requests, want 3 (scrape, direct, redirected)", len(os))
	}
	for i, h := range os {
		for _, k := range []string{"Authorization", "X-Api-Key", "X-Trace"} {
			if v := h.Get(k); v != "" {
				t.Errorf("other origin's request %d carries %s: %q", i, k, v)
			}
		}
		if want := map[bool]string{true: "scrape-secret", false: ""}[i == 0]; h.Get("X-Scrape-Key") != want {
			t.Errorf("other origin's request %d: X-Scrape-Key %q, want %q", i, h.Get("X-Scrape-Key"), want)
		}
	}
	if strings.Contains(c.ServerMetricsURL(), "@") || strings.Contains(c.BaseURL, "@") {
		t.Errorf("a URL kept its credentials: %q %q", c.BaseURL, c.ServerMetricsURL())
	}
}

// TestScrapeURLCredentials: a --server-metrics URL's own user:password
// becomes the scrape's Basic authentication and leaves the URL; on the
// base origin the scrape also carries --header's pairs.
func TestScrapeURLCredentials(t *testing.T) {
	c, err := benchtest.ParseArgs([]string{"--model", "m", "--base-url", "http://h:1", "--header", "X-A=a",
		"--server-metrics", "http://bob:s%40cret@m.example:9100/metrics"}, benchtest.NoEnv)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if c.ServerMetricsURL() != "http://m.example:9100/metrics" {
		t.Errorf("scrape URL %q", c.ServerMetricsURL())
	}
	hs := s.ScrapeHeaders()
	if len(hs) != 1 || hs[0].Key != "Authorization" || hs[0].Value != "Basic Ym9iOnNAY3JldA==" {
		t.Errorf("scrape headers %v, want only bob's Basic authentication", hs)
	}

	c, err = benchtest.ParseArgs([]string{"--model", "m", "--base-url", "http://h:1", "--header", "X-A=a",
		"--server-metrics", "--server-metrics-header", "X-A=b", "X-B=c"}, benchtest.NoEnv)
	if err != nil {
		t.Fatal(err)
	}
	s, _ = New(c)
	if got := s.ScrapeHeaders(); len(got) != 2 || got[0].Value != "b" || got[1].Key != "X-B" {
		t.Errorf("scrape headers on the base origin %v, want X-A=b (replaced) and X-B=c", got)
	}
}

func TestScrapeHeaderErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--server-metrics-header", "X=1"}, "argument --server-metrics-header: it needs --server-metrics"},
		{[]string{"--server-metrics", "--server-metrics-header", "novalue"}, "argument --server-metrics-header: a header has no '='"},
		{[]string{"--server-metrics", "http://u:p@o:1/m", "--server-metrics-header", "authorization=x"},
			"argument --server-metrics-header: authorization=... beside the user:password@"},
		{[]string{"--server-metrics", "http://u:p@o:1/m", "--server-metrics-header", "X=a\x01"}, "argument --server-metrics-header: header \"X\""},
		{[]string{"--server-metrics", "http://u%zz:p@o:1/m"}, "argument --server-metrics: the user name before '@' has a bad %-escape"},
	} {
		_, err := benchtest.ParseArgs(append([]string{"--model", "m"}, tt.args...), benchtest.NoEnv)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want an error with %q", tt.args, err, tt.want)
		}
	}
}

func TestOriginOf(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		same bool
	}{
		{"http://h/x", "http://H:80/y", true},
		{"https://h/x", "https://h:443", true},
		{"http://h:8000", "http://h:8001", false},
		{"http://h", "https://h", false},
		{"http://h", "http://h.example", false},
		{"", "", false},
	} {
		if got := SameOrigin(tt.a, tt.b); got != tt.same {
			t.Errorf("SameOrigin(%q, %q) = %v", tt.a, tt.b, got)
		}
	}
}
