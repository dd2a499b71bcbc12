package metrics

import (
	"cmp"
	"slices"
)

// ErrorGroup is the failed requests that failed alike: the same status,
// the same error text (Python's `errors` entry: a reason phrase, a
// traceback, the no-token text) and the same server message.
type ErrorGroup struct {
	Count   int
	Status  int    // the answer's status code, 0 when none arrived
	Reason  string // RequestResult.Error
	Message string // RequestResult.ServerMessage
	// Example is the index of the group's first request.
	Example int
}

// ErrorSummary is every failed request of a run, grouped.
type ErrorSummary struct {
	Failed, Requests int
	// Groups holds at most maxErrorGroups groups, the largest first (equal
	// counts by their first request); Other counts the failed requests of
	// the groups left out.
	Groups []ErrorGroup
	Other  int
}

// maxErrorGroups bounds the groups kept: error texts that carry a count
// ("after 12 token events") could make one group per request.
const maxErrorGroups = 20

// AllFailed reports a run in which requests ran and none succeeded.
func (e *ErrorSummary) AllFailed() bool { return e.Requests > 0 && e.Failed == e.Requests }

// GroupErrors groups the failed requests of l.
func GroupErrors(l *Log) ErrorSummary {
	type key struct {
		status          int
		reason, message string
	}
	out := ErrorSummary{}
	at := map[key]int{}
	var groups []ErrorGroup
	for _, r := range l.All() {
		out.Requests++
		if r.Success {
			continue
		}
		out.Failed++
		k := key{r.HTTPStatus, r.Error, r.ServerMessage}
		if g, ok := at[k]; ok {
			groups[g].Count++
			continue
		}
		at[k] = len(groups)
		groups = append(groups, ErrorGroup{Count: 1, Status: r.HTTPStatus, Reason: r.Error, Message: r.ServerMessage, Example: r.Index})
	}
	slices.SortStableFunc(groups, func(a, b ErrorGroup) int { return cmp.Compare(b.Count, a.Count) })
	if len(groups) > maxErrorGroups {
		for _, g := range groups[maxErrorGroups:] {
			out.Other += g.Count
		}
		groups = groups[:maxErrorGroups]
	}
	out.Groups = groups
	return out
}
