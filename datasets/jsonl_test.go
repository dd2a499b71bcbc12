package datasets

import (
	"reflect"
	"strings"
	"testing"
)

func TestJSONLines(t *testing.T) {
	long := `{"p": "` + strings.Repeat("x", 200_000) + `"}`
	tests := []struct {
		name  string
		in    string
		lines []int
		texts []string
	}{
		{"empty", "", nil, nil},
		{"blank lines skipped, numbers kept", "\n{\"a\": 1}\n  \n\t{\"b\": 2}  \n", []int{2, 4}, []string{`{"a": 1}`, `{"b": 2}`}},
		{"no final newline", `{"a": 1}`, []int{1}, []string{`{"a": 1}`}},
		{"CRLF", "{\"a\": 1}\r\n\r\n{\"b\": 2}\r\n", []int{1, 3}, []string{`{"a": 1}`, `{"b": 2}`}},
		{"line above bufio's default limit", "\n" + long + "\n", []int{2}, []string{long}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lines []int
			var texts []string
			l := newJSONLines(strings.NewReader(tt.in))
			for l.next() {
				lines = append(lines, l.line)
				texts = append(texts, string(l.text))
			}
			if err := l.err(); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(lines, tt.lines) || !reflect.DeepEqual(texts, tt.texts) {
				t.Errorf("got lines %v texts %.40q, want %v %.40q", lines, texts, tt.lines, tt.texts)
			}
		})
	}
}
