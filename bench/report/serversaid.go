package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/metrics"
)

// What the server said: the failed requests grouped by what failed them
// (the sidecar's "errors", a table on the report's first screen, lines on
// stderr after the block), and its output token counts beside the ones
// Python's figures use (the sidecar's "usage", stderr notes).

// SidecarErrors is the sidecar's account of the failed requests.
type SidecarErrors struct {
	Failed    int  `json:"failed"`
	Requests  int  `json:"requests"`
	AllFailed bool `json:"all_failed"`
	// URL is where the requests went (the api URL).
	URL    string              `json:"url"`
	Groups []SidecarErrorGroup `json:"groups"`
	// Other counts the failed requests of the groups left out.
	Other int `json:"other"`
}

// SidecarErrorGroup is one kind of failure: its status (0: no answer
// arrived), Python's error text, the server's message, and the first
// request that failed so.
type SidecarErrorGroup struct {
	Count            int    `json:"count"`
	Status           int    `json:"status"`
	Reason           string `json:"reason"`
	Message          string `json:"message"`
	ExampleIndex     int    `json:"example_index"`
	ExampleRequestID string `json:"example_request_id"`
}

// NewSidecarErrors is e in the sidecar's form, nil when nothing failed.
// requestID names request i ("" when it was sent without an id).
func NewSidecarErrors(e metrics.ErrorSummary, url string, requestID func(int) string) *SidecarErrors {
	if e.Failed == 0 {
		return nil
	}
	out := &SidecarErrors{Failed: e.Failed, Requests: e.Requests, AllFailed: e.AllFailed(), URL: url,
		Groups: make([]SidecarErrorGroup, 0, len(e.Groups)), Other: e.Other}
	for _, g := range e.Groups {
		sg := SidecarErrorGroup{Count: g.Count, Status: g.Status, Reason: g.Reason, Message: g.Message, ExampleIndex: g.Example}
		if requestID != nil {
			sg.ExampleRequestID = requestID(g.Example)
		}
		out.Groups = append(out.Groups, sg)
	}
	return out
}

// shownErrorGroups is how many kinds of failure stderr names.
const shownErrorGroups = 5

// WriteErrors prints, after the block, what failed the run's requests,
// one line per kind, the most frequent first; a run in which every
// request failed says so first, in capitals, since its block measured
// nothing. Nothing when no request failed.
func WriteErrors(w io.Writer, e *SidecarErrors) {
	if e == nil {
		return
	}
	var b strings.Builder
	if e.AllFailed {
		fmt.Fprintf(&b, "stampede: ALL %d REQUESTS FAILED: the block above measured nothing. The server (%s) said:\n", e.Requests, e.URL)
	} else {
		fmt.Fprintf(&b, "stampede: %d of %d requests failed:\n", e.Failed, e.Requests)
	}
	left := e.Other
	for i, g := range e.Groups {
		if i >= shownErrorGroups {
			left += g.Count
			continue
		}
		fmt.Fprintf(&b, "  %d × %s\n", g.Count, pyout.TerminalText(g.describe()))
	}
	if left > 0 {
		fmt.Fprintf(&b, "  %d others (all of them in the .stampede.json sidecar's \"errors\" with --save-result)\n", left)
	}
	io.WriteString(w, b.String())
}

// describe is a group in one line: "404 Not Found: The model `x` does
// not exist." Python's text of an exception is a traceback, of which the
// last line is the exception.
func (g *SidecarErrorGroup) describe() string {
	reason := strings.TrimRight(g.Reason, " \t\r\n")
	reason = reason[strings.LastIndexByte(reason, '\n')+1:]
	text := reason
	if g.Status != 0 && g.Status != 200 && !strings.HasPrefix(reason, "server answered") {
		text = strings.TrimSpace(strconv.Itoa(g.Status) + " " + reason)
	}
	if g.Message != "" && g.Message != reason {
		text += ": " + g.Message
	}
	return text
}

// SidecarUsage is the server's output token counts beside Python's: over
// the successful requests whose server sent one, its total and the total
// Python's figures count for them, and the counts no answer can have.
type SidecarUsage struct {
	Requests            int   `json:"requests"`
	InTokenChunk        int   `json:"in_token_chunk"`
	ServerOutputTokens  int64 `json:"server_output_tokens"`
	CountedOutputTokens int64 `json:"counted_output_tokens"`
	Disagree            bool  `json:"disagree"`
	// Odd holds one entry per kind of count that no answer can have:
	// negative, zero_with_tokens, over_max_tokens.
	Odd []SidecarOddUsage `json:"odd"`
}

// SidecarOddUsage is one kind of odd count and its first request.
type SidecarOddUsage struct {
	Kind         string `json:"kind"`
	Requests     int    `json:"requests"`
	ExampleIndex int    `json:"example_index"`
	Tokens       int64  `json:"tokens"`
	MaxTokens    int    `json:"max_tokens,omitempty"`
}

// NewSidecarUsage is u in the sidecar's form, nil when no server sent a
// count.
func NewSidecarUsage(u metrics.UsageCheck) *SidecarUsage {
	if u.Requests == 0 {
		return nil
	}
	out := &SidecarUsage{Requests: u.Requests, InTokenChunk: u.InTokenChunk, ServerOutputTokens: u.ServerTokens,
		CountedOutputTokens: u.Counted, Disagree: u.Disagree(), Odd: []SidecarOddUsage{}}
	for _, k := range []struct {
		kind string
		c    metrics.OddCount
	}{{"negative", u.Negative}, {"zero_with_tokens", u.ZeroWithText}, {"over_max_tokens", u.OverMax}} {
		if k.c.Requests > 0 {
			out.Odd = append(out.Odd, SidecarOddUsage{Kind: k.kind, Requests: k.c.Requests,
				ExampleIndex: k.c.Example, Tokens: k.c.Tokens, MaxTokens: k.c.Max})
		}
	}
	return out
}

// WriteUsageNotes warns on stderr when the server's output token total
// and the counted one differ by more than 1 %, and names the odd counts
// in one note; nothing otherwise.
func WriteUsageNotes(w io.Writer, u *SidecarUsage) {
	if u == nil {
		return
	}
	if u.Disagree {
		where := ""
		if u.InTokenChunk > 0 {
			where = fmt.Sprintf("; %d of them sent it only in a chunk with choices, which Python does not read, so their text was counted with the tokenizer", u.InTokenChunk)
		}
		fmt.Fprintf(w, "stampede: WARNING: the server counted %d output tokens on %d requests, the block counts %d (%+.1f%%)%s\n",
			u.ServerOutputTokens, u.Requests, u.CountedOutputTokens, 100*float64(u.CountedOutputTokens-u.ServerOutputTokens)/float64(max(u.ServerOutputTokens, 1)), where)
	}
	if len(u.Odd) == 0 {
		return
	}
	parts := make([]string, 0, len(u.Odd))
	for _, o := range u.Odd {
		switch o.Kind {
		case "negative":
			parts = append(parts, fmt.Sprintf("%d negative (request %d: %d)", o.Requests, o.ExampleIndex, o.Tokens))
		case "zero_with_tokens":
			parts = append(parts, fmt.Sprintf("%d of 0 for an answer that streamed tokens (request %d)", o.Requests, o.ExampleIndex))
		case "over_max_tokens":
			if o.MaxTokens == 0 {
				parts = append(parts, fmt.Sprintf("%d beyond any context (request %d: %d)", o.Requests, o.ExampleIndex, o.Tokens))
				continue
			}
			parts = append(parts, fmt.Sprintf("%d over max_tokens (request %d: %d > %d)", o.Requests, o.ExampleIndex, o.Tokens, o.MaxTokens))
		}
	}
	fmt.Fprintf(w, "stampede: the server's usage.completion_tokens looked wrong: %s; the block's token totals and throughputs count them as Python does, as given (or, for 0, by the tokenizer)\n",
		strings.Join(parts, ", "))
}

// errorsView is the report's table of a run's failures, on its first
// screen beside the summary.
type errorsView struct {
	Heading   string
	AllFailed bool
	Failed    int
	Requests  int
	URL       string
	Rows      []errorRow
	Other     int
}

type errorRow struct {
	Count, Status            int
	Reason, Message, Example string
}

// shownReportErrors is how many kinds of failure the report's table lists.
const shownReportErrors = 8

func newErrorsView(r *ReportRun, many bool) *errorsView {
	var e SidecarErrors
	if !r.sidecarSection("errors", &e) || e.Failed == 0 {
		return nil
	}
	v := &errorsView{Heading: runHeading(r, many), AllFailed: e.AllFailed, Failed: e.Failed, Requests: e.Requests, URL: e.URL, Other: e.Other}
	for i, g := range e.Groups {
		if i >= shownReportErrors {
			v.Other += g.Count
			continue
		}
		example := g.ExampleRequestID
		if example == "" {
			example = "#" + strconv.Itoa(g.ExampleIndex)
		}
		reason := strings.TrimRight(g.Reason, " \t\r\n")
		v.Rows = append(v.Rows, errorRow{g.Count, g.Status, reason[strings.LastIndexByte(reason, '\n')+1:], g.Message, example})
	}
	return v
}
