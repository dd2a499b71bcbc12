package metrics

// MaxOpen is the most of l's requests open at once, each from its start
// to its end (start + latency); false when none ran. A request ending as
// another starts is not counted open with it, nor one of no latency. The
// engine's tests and a cluster agent's memory (its most open streams)
// share it.
func MaxOpen(l *Log) (int, bool) {
	es := newEventSort("")
	defer es.close()
	any := false
	for _, r := range l.All() {
		if r.LatencyNs > 0 {
			es.add(timeKey(r.StartNs), 1)
			es.add(timeKey(r.StartNs+r.LatencyNs), 0) // ends before starts
			any = true
		}
	}
	if !any {
		return 0, false
	}
	open, most := 0, 0
	es.each(func(_, start uint64) {
		if start == 1 {
			open++
		} else {
			open--
		}
		most = max(most, open)
	})
	return most, true
}
