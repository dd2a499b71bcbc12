// Package pyouttest holds what the golden tests of Python's outputs
// (bench/pyout) and of stampede's own blocks (bench/report) share: the
// fixed run their golden files are computed from, the golden comparison,
// and the run of a golden directory's Python reference (pyref.py).
package pyouttest

import (
	"strings"
	"time"

	"github.com/stampede-bench/stampede/metrics"
)

const ms = int64(time.Millisecond)

// GoldenRun is the fixed 12-request generation run: varied TTFTs, gaps,
// output lengths (usage, tokenizer-counted, single-token), queue times,
// two failures and non-ASCII text. Python's output goldens (bench/pyout,
// whose pyref.py rebuilds it) and bench's trimmed and timeline goldens are
// computed from it.
func GoldenRun() *metrics.RunData {
	return &metrics.RunData{DurationNs: 5432 * ms, Log: metrics.LogOf(GoldenResults()...)}
}

// GoldenResults are GoldenRun's requests.
func GoldenResults() []metrics.RequestResult {
	var rs []metrics.RequestResult
	for i := range 12 {
		start := int64(i) * 100 * ms
		r := metrics.RequestResult{
			Index: i, PromptLen: 100 + 7*i, StartNs: start, ArrivalNs: start - int64(i%4)*5*ms,
			QueueNs: int64(i%4) * 5 * ms, NumInputSequences: 1,
		}
		switch {
		case i == 4:
			r.Error = "Internal Server Error"
		case i == 9:
			r.Error = "Traceback (most recent call last):\n  ConnectionResetError: [Errno 104]"
			r.TTFTNs = 80 * ms
		default:
			r.Success = true
			r.TTFTNs = int64(60+13*i) * ms
			gaps := 2 + i%5
			if i == 7 {
				gaps = 0
			}
			for g := range gaps {
				r.ITLNs = append(r.ITLNs, int64(20+(i*7+g*3)%17)*ms+int64(i*1357)%1000*1000)
			}
			r.ChunkEvents = len(r.ITLNs) + 1
			r.LatencyNs = r.TTFTNs
			for _, gap := range r.ITLNs {
				r.LatencyNs += gap
			}
			if i%3 != 0 {
				r.OutputTokens = r.ChunkEvents * 2
			}
			r.GeneratedText = strings.Repeat("tok ", r.ChunkEvents) + "é€"
		}
		rs = append(rs, r)
	}
	return rs
}
