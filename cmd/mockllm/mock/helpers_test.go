package mock

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"
)

// startServer starts a mock server on a free port for one test.
func startServer(t testing.TB, cfg Config) (*Server, string) {
	t.Helper()
	srv, err := Start(cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return srv, "http://" + srv.Addr()
}

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return resp
}

// readJSON reads a whole response body as a JSON object.
func readJSON(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	return m
}

// keysOf returns the sorted keys of a JSON object.
func keysOf(v any) []string {
	m, _ := v.(map[string]any)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sorted(keys ...string) []string {
	sort.Strings(keys)
	return keys
}

// sseStream is what a client following spec §b reads from a stream.
type sseStream struct {
	chunks      []map[string]any // every JSON chunk, in order
	tokenEvents int              // chunks whose "choices" is non-empty
	tokenTimes  []time.Time      // arrival time of each token event
	text        string           // completions text or chat delta content
	usage       map[string]any   // the last truthy usage
	done        bool             // data: [DONE] arrived
}

// readSSE reads a streaming body the way vllm bench serve does: split on
// blank lines, skip comments, strip "data: ", stop caring at [DONE].
func readSSE(t testing.TB, body io.Reader) sseStream {
	t.Helper()
	var s sseStream
	r := bufio.NewReader(body)
	var buf bytes.Buffer
	for {
		line, err := r.ReadString('\n')
		buf.WriteString(line)
		for {
			i := strings.Index(buf.String(), "\n\n")
			if i < 0 {
				break
			}
			msg := strings.TrimSpace(buf.String()[:i])
			rest := buf.String()[i+2:]
			buf.Reset()
			buf.WriteString(rest)
			if msg == "" || strings.HasPrefix(msg, ":") {
				continue
			}
			data := strings.TrimPrefix(msg, "data: ")
			if data == "[DONE]" {
				s.done = true
				continue
			}
			var chunk map[string]any
			if err := json.Unmarshal([]byte(data), &chunk); err != nil {
				t.Fatalf("chunk %q: %v", data, err)
			}
			s.chunks = append(s.chunks, chunk)
			if choices, _ := chunk["choices"].([]any); len(choices) > 0 {
				s.tokenEvents++
				s.tokenTimes = append(s.tokenTimes, time.Now())
				c := choices[0].(map[string]any)
				if text, ok := c["text"].(string); ok {
					s.text += text
				}
				if d, ok := c["delta"].(map[string]any); ok {
					content, _ := d["content"].(string)
					s.text += content
				}
			} else if u, ok := chunk["usage"].(map[string]any); ok && len(u) > 0 {
				s.usage = u
			}
		}
		if err == io.EOF {
			return s
		}
		if err != nil {
			t.Fatalf("read stream: %v", err)
		}
	}
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o644) }
