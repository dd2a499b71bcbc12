package datasets

import (
	"sort"
	"strconv"
	"strings"
)

// Table is what a run's phases after the measured part read of each
// request, kept while the prompts themselves go (their bytes are in the
// run's request store, or gone): the x-request-id, the expected output
// length and the audio clip's duration. It costs 4 bytes a request, plus 8
// for audio and a few for ids that do not follow the usual prefix + index.
type Table struct {
	outputLens []int32
	ids        requestIDs
	audioSec   []float64 // nil until a request has audio
	// sentAs, when set, are the ids the requests went out with (a cluster
	// run's, each agent drawing its own prefix).
	sentAs map[int]string
}

// NewTable returns an empty table whose requests' ids are usually prefix +
// their index.
func NewTable(prefix string) *Table { return &Table{ids: requestIDs{prefix: prefix}} }

// TableFrom is a table of n requests whose ids and expected output
// lengths the functions give (a merged run's).
func TableFrom(n int, id func(int) string, outputLen func(int) int) *Table {
	t := NewTable("")
	for i := range n {
		t.Add(&Request{RequestID: id(i), ExpectedOutputLen: outputLen(i)})
	}
	return t
}

// Add appends r, the next request.
func (t *Table) Add(r *Request) {
	i := len(t.outputLens)
	t.outputLens = append(t.outputLens, int32(r.ExpectedOutputLen))
	t.ids.add(i, r.RequestID)
	if r.Audio != nil {
		if t.audioSec == nil {
			t.audioSec = make([]float64, i, cap(t.outputLens))
		}
	}
	if t.audioSec != nil {
		sec := 0.0
		if r.Audio != nil {
			sec = r.Audio.DurationSec
		}
		t.audioSec = append(t.audioSec, sec)
	}
}

// Len returns how many requests were added.
func (t *Table) Len() int { return len(t.outputLens) }

// RequestID is request i's x-request-id ("" for none, or out of range).
func (t *Table) RequestID(i int) string {
	if i < 0 || i >= t.Len() {
		return ""
	}
	if id, ok := t.sentAs[i]; ok {
		return id
	}
	return t.ids.at(i)
}

// ExpectedOutputLen is request i's expected output length (0 out of range).
func (t *Table) ExpectedOutputLen(i int) int {
	if i < 0 || i >= t.Len() {
		return 0
	}
	return int(t.outputLens[i])
}

// AudioSec is request i's audio duration, 0 without audio.
func (t *Table) AudioSec(i int) float64 {
	if t.audioSec == nil || i < 0 || i >= len(t.audioSec) {
		return 0
	}
	return t.audioSec[i]
}

// SentAs replaces request i's id by the one it went out with (another
// cluster agent's prefix); only the ids that differ are kept.
func (t *Table) SentAs(i int, id string) {
	if t.sentAs == nil {
		t.sentAs = map[int]string{}
	}
	t.sentAs[i] = id
}

// requestIDs keeps ids that are mostly prefix + a number running with the
// index: runs of them as where they start and by how much the number
// leads the index, an empty run for requests without an id, and any other
// id as it is.
type requestIDs struct {
	prefix string
	runs   []idRun
	other  map[int]string
}

// idRun: from request start on, the id is prefix + (index + shift), or ""
// when empty.
type idRun struct {
	start, shift int
	empty        bool
}

func (r idRun) id(prefix string, i int) string {
	if r.empty {
		return ""
	}
	return prefix + strconv.Itoa(i+r.shift)
}

func (ids *requestIDs) add(i int, id string) {
	if n := len(ids.runs); n > 0 && ids.runs[n-1].id(ids.prefix, i) == id {
		return
	}
	switch {
	case id == "":
		ids.runs = append(ids.runs, idRun{start: i, empty: true})
		return
	case strings.HasPrefix(id, ids.prefix):
		if k, err := strconv.Atoi(id[len(ids.prefix):]); err == nil && strconv.Itoa(k) == id[len(ids.prefix):] {
			ids.runs = append(ids.runs, idRun{start: i, shift: k - i})
			return
		}
	}
	if ids.other == nil {
		ids.other = map[int]string{}
	}
	ids.other[i] = id
}

func (ids *requestIDs) at(i int) string {
	if id, ok := ids.other[i]; ok {
		return id
	}
	k := sort.Search(len(ids.runs), func(k int) bool { return ids.runs[k].start > i }) - 1
	if k < 0 {
		return ""
	}
	return ids.runs[k].id(ids.prefix, i)
}
