package report

import "sort"

// The report's timeline draws requests in lanes rather than one row per
// request: a lane is a concurrency slot, and a request takes the lowest
// lane free when it starts, so a run is as many rows tall as it had
// requests in flight at its peak, not as it had requests (300 requests at
// a concurrency of 40 make 40 rows). --plot-timeline's page keeps vLLM's
// row per request.

// requestEndUs is when a row's drawing ends: its last token event or its
// latency, whichever is later.
func requestEndUs(r *timelineRequest) int64 {
	end := r.LatencyUs
	if n := len(r.EventsUs); n > 0 {
		end = max(end, r.EventsUs[n-1])
	}
	return r.StartUs + end
}

// packLanes sets each request's Lane and returns how many lanes there
// are. Requests are placed in order of start (ties in request order),
// each in the lowest lane whose last request ended at or before its
// start; two requests that overlap in time never share a lane, and the
// lane count is the most requests in flight at once.
func packLanes(reqs []timelineRequest) int {
	order := make([]int, len(reqs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return reqs[order[a]].StartUs < reqs[order[b]].StartUs })
	var free []int64 // per lane, when its last request ends
	for _, i := range order {
		r := &reqs[i]
		lane := len(free)
		for k, end := range free {
			if end <= r.StartUs {
				lane = k
				break
			}
		}
		if lane == len(free) {
			free = append(free, 0)
		}
		free[lane] = requestEndUs(r)
		r.Lane = lane
	}
	return len(free)
}
