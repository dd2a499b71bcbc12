package search

import (
	"errors"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/internal/py"
)

func TestParseSweepAxis(t *testing.T) {
	a, err := ParseSweepAxis("--max-concurrency=8, 32,128")
	if err != nil || a.Flag != "max-concurrency" || strings.Join(a.Values, "|") != "8|32|128" {
		t.Errorf("got %+v, %v", a, err)
	}
	for _, bad := range []string{"max-concurrency", "=1,2", "request-rate=1,,2"} {
		var usage *py.UsageError
		if _, err := ParseSweepAxis(bad); !errors.As(err, &usage) || !strings.Contains(usage.Msg, "FLAG=V1,V2") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
