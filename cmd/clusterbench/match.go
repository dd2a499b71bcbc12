package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
)

// truthSet is the merged truth logs: every request by its index, and every
// mock's decode steps.
type truthSet struct {
	byIndex map[int]mock.TruthRequest
	steps   []stepSpread // one per mock, in -truth order
	// mockOf is the mock (its -truth position) of each request; writes
	// each mock's token writes (SentNs), in order.
	mockOf map[int]int
	writes [][]int64
}

// stepSpread is one mock's decode steps as its truth log shows them. A
// step is the token events sharing one intended time (decode-step mode
// gives every stream's token of a step the step's instant); its spread is
// its last write − its first, its lateness its last write − the intended
// time. A mock that keeps up with its steps has a spread well under the
// step period.
type stepSpread struct {
	path          string
	steps, tokens int
	spreadMaxNs   int64
	lateMaxNs     int64
	// tokensMax is the largest step's token count.
	tokensMax int
}

func mergeTruth(paths []string) (truthSet, error) {
	set := truthSet{byIndex: map[int]mock.TruthRequest{}, mockOf: map[int]int{}}
	for k, path := range paths {
		log, err := mock.ReadTruthLog(path)
		if err != nil {
			return set, err
		}
		for _, tr := range log {
			i, err := requestIndex(tr.RequestID)
			if err != nil {
				return set, fmt.Errorf("%s: %w", path, err)
			}
			if _, dup := set.byIndex[i]; dup {
				return set, fmt.Errorf("request %d is in the truth logs twice (the second in %s)", i, path)
			}
			set.byIndex[i] = tr
			set.mockOf[i] = k
		}
		set.steps = append(set.steps, spreadOf(path, log))
		set.writes = append(set.writes, sortedWrites(log))
	}
	return set, nil
}

// requestIndex is the index in a request id "<prefix><index>": its
// trailing digits.
func requestIndex(id string) (int, error) {
	digits := id[strings.LastIndexFunc(id, func(r rune) bool { return r < '0' || r > '9' })+1:]
	i, err := strconv.Atoi(digits)
	if err != nil {
		return 0, fmt.Errorf("request id %q ends in no index", id)
	}
	return i, nil
}

func sortedWrites(log []mock.TruthRequest) []int64 {
	var out []int64
	for _, tr := range log {
		for _, t := range tr.Tokens {
			out = append(out, t.SentNs)
		}
	}
	slices.Sort(out)
	return out
}

// writesBetween counts the writes in (fromNs, toNs].
func writesBetween(writes []int64, fromNs, toNs int64) int {
	lo, _ := slices.BinarySearch(writes, fromNs+1)
	hi, _ := slices.BinarySearch(writes, toNs+1)
	return max(0, hi-lo)
}

func spreadOf(path string, log []mock.TruthRequest) stepSpread {
	type step struct {
		first, last int64
		tokens      int
	}
	steps := map[int64]*step{}
	for _, tr := range log {
		for _, t := range tr.Tokens {
			s := steps[t.IntendedNs]
			if s == nil {
				s = &step{first: t.SentNs, last: t.SentNs}
				steps[t.IntendedNs] = s
			}
			s.first, s.last = min(s.first, t.SentNs), max(s.last, t.SentNs)
			s.tokens++
		}
	}
	out := stepSpread{path: path, steps: len(steps)}
	for intended, s := range steps {
		out.tokens += s.tokens
		out.spreadMaxNs = max(out.spreadMaxNs, s.last-s.first)
		out.lateMaxNs = max(out.lateMaxNs, s.last-intended)
		out.tokensMax = max(out.tokensMax, s.tokens)
	}
	return out
}

// matched is every token's error, in µs.
type matched struct {
	requests   int // requests found in both, with equal token counts
	mismatched int // found in both with another token count
	// tokenErrUs is client stamp − truth stamp for every token (the first
	// included); itlErrUs client gap − server gap; ttftErrUs the first
	// token's error, a request at a time. startToArrivalUs is from the
	// client's start stamp to the request's arrival at the mock (its
	// kernel receive stamp when the log has one): connect and send.
	tokenErrUs, itlErrUs, ttftErrUs, startToArrivalUs []float64
	// lateShared counts the tokens beyond 1 ms whose stamp is the next
	// token's (a client gap of exactly 0 after them): read together with
	// it, so stamped when the later one arrived. The health line counts
	// these events ("shared a read with the event before").
	lateShared int
	// lateMockStall counts the other tokens beyond 1 ms whose mock wrote
	// nothing else between the token's truth stamp and lateUs before the
	// client's: its one writer thread stalled between reading the clock
	// and the write(2), so the truth stamp is early, not the client's late.
	lateMockStall int
}

// match puts request i's token events on CLOCK_MONOTONIC (agent i mod N's
// time 0 is zeroMonoNs[i mod N]) and compares them with the truth's.
func match(res *detailed, truth *truthSet, zeroMonoNs []int64) matched {
	var m matched
	for i, itls := range res.ITLs {
		tr, ok := truth.byIndex[i]
		if !ok || res.TTFTs[i] == 0 {
			continue
		}
		if len(itls)+1 != len(tr.Tokens) {
			m.mismatched++
			continue
		}
		m.requests++
		zero := zeroMonoNs[i%len(zeroMonoNs)]
		// Seconds from the merged clock's zero; summed in float64 (52 bits:
		// under a nanosecond of rounding over a run of hours).
		at := res.StartTimes[i] + res.TTFTs[i]
		prevErr := 0.0
		for j := range tr.Tokens {
			if j > 0 {
				at += itls[j-1]
			}
			stampNs := zero + int64(math.Round(at*1e9))
			errUs := float64(stampNs-tr.Tokens[j].SentNs) / 1e3
			m.tokenErrUs = append(m.tokenErrUs, errUs)
			switch {
			case math.Abs(errUs) <= lateUs:
			case j < len(itls) && itls[j] == 0:
				m.lateShared++
			case truth.writes != nil && writesBetween(truth.writes[truth.mockOf[i]], tr.Tokens[j].SentNs, stampNs-lateUs*1e3) == 0:
				m.lateMockStall++
			}
			if j > 0 {
				m.itlErrUs = append(m.itlErrUs, errUs-prevErr)
			}
			prevErr = errUs
		}
		// A TTFT starts at the client's own stamp before it sends (no
		// server sees that moment), so its error is its first token's.
		m.ttftErrUs = append(m.ttftErrUs, m.tokenErrUs[len(m.tokenErrUs)-len(tr.Tokens)])
		arrival := tr.ArrivalRxNs
		if arrival == 0 {
			arrival = tr.ArrivalNs
		}
		startNs := zero + int64(math.Round(res.StartTimes[i]*1e9))
		m.startToArrivalUs = append(m.startToArrivalUs, float64(arrival-startNs)/1e3)
	}
	return m
}
