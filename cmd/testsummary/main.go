// Command testsummary reads `go test -json` on stdin and prints what the
// plain `go test` would (each package's ok/FAIL line, and the whole output
// of every failed test), then the tests that were skipped with the reason
// each gave, so that a skip is never hidden behind an "ok". It exits 1 when
// a test or a package failed, as go test does.
//
//	go test -json ./... | go run ./cmd/testsummary
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of test2json's output.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// skip is one skipped test and the reason its last output line gave.
type skip struct{ pkg, test, reason string }

func main() {
	failed, err := summarize(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// summarize copies the plain output to w and reports whether anything
// failed.
func summarize(r io.Reader, w io.Writer) (failed bool, err error) {
	type key struct{ pkg, test string }
	outputs := map[key][]string{} // a running test's output, printed if it fails
	var skips []skip
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// Not test2json's (a build error the go command printed).
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		k := key{e.Package, e.Test}
		switch {
		case e.Test == "" && e.Action == "output":
			if e.Output != "PASS\n" { // plain go test leaves it out without -v
				fmt.Fprint(w, e.Output)
			}
		case e.Test == "" && e.Action == "fail":
			failed = true
		case e.Action == "output":
			outputs[k] = append(outputs[k], e.Output)
		case e.Action == "fail":
			failed = true
			for _, o := range outputs[k] {
				fmt.Fprint(w, o)
			}
			delete(outputs, k)
		case e.Action == "skip" && e.Test != "":
			skips = append(skips, skip{e.Package, e.Test, skipReason(outputs[k])})
			delete(outputs, k)
		case e.Action == "pass" || e.Action == "skip":
			delete(outputs, k)
		}
	}
	if err := sc.Err(); err != nil {
		return failed, err
	}
	writeSkips(w, skips)
	return failed, nil
}

// skipReason is the message a skipped test gave: its output's last line
// that is not the "--- SKIP" line itself, without the file:line prefix.
func skipReason(out []string) string {
	for i := len(out) - 1; i >= 0; i-- {
		s := strings.TrimSpace(out[i])
		if s == "" || strings.HasPrefix(s, "--- SKIP") || strings.HasPrefix(s, "=== ") {
			continue
		}
		if _, msg, ok := strings.Cut(s, ": "); ok && strings.Contains(s[:len(s)-len(msg)], ".go:") {
			return msg
		}
		return s
	}
	return "(no reason given)"
}

// writeSkips lists the skipped tests grouped by reason, most common first.
func writeSkips(w io.Writer, skips []skip) {
	if len(skips) == 0 {
		return
	}
	byReason := map[string][]skip{}
	for _, s := range skips {
		byReason[s.reason] = append(byReason[s.reason], s)
	}
	reasons := make([]string, 0, len(byReason))
	for r := range byReason {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool {
		if a, b := len(byReason[reasons[i]]), len(byReason[reasons[j]]); a != b {
			return a > b
		}
		return reasons[i] < reasons[j]
	})
	fmt.Fprintf(w, "\n%d tests skipped:\n", len(skips))
	for _, r := range reasons {
		list := byReason[r]
		fmt.Fprintf(w, "  %d × %s\n", len(list), r)
		for i, s := range list {
			if i == 5 {
				fmt.Fprintf(w, "      … and %d more\n", len(list)-5)
				break
			}
			fmt.Fprintf(w, "      %s %s\n", strings.TrimPrefix(s.pkg, "github.com/stampede-bench/stampede/"), s.test)
		}
	}
}
