package mock

import (
	"runtime"
	"sync"
	"time"

	"github.com/stampede-bench/stampede/internal/fifo"
)

// writer is the token clock. One goroutine keeps the schedule of every
// stream the event loops hand it and writes each token to its socket
// itself at the intended time, so the only work between the timer firing
// and write(2) is encoding the chunk. The event loops keep
// accepting, parsing and answering everything that is not on the schedule.
type writer struct {
	s     *Server
	cfg   *Config
	clock monoClock
	wake  *wakeup

	mu       sync.Mutex
	incoming []*stream // handed over by the event loops
	stopping bool

	// Everything below is owned by the writer goroutine.
	batch      []*stream
	due        dueHeap   // per-stream mode
	active     int       // per-stream mode: admitted, unfinished streams
	running    []*stream // decode-step mode
	waiting    fifo.Queue[*stream]
	nextStepNs int64 // decode-step mode: 0 while idle
	// fireNs is when the timer fires next (0: disarmed), as last armed;
	// periodNs its period (0: once).
	fireNs, periodNs int64
	yieldNs          int64  // last pass through the scheduler
	arms             uint64 // timer settings by setTimer
	steps            uint64
	out              []byte
	enc              encoder
	truth            *truthWriter
	spec             *specCounters // with SpecDecodeStream (chunks.go)
	timing           *timing
	done             chan struct{}
	// closes, set before stop, go to the truth log as C records;
	// arrivals, its A records.
	closes   []floodClose
	arrivals *arrivalIndex
}

func newWriter(s *Server) (*writer, error) {
	wk, err := newWakeup()
	if err != nil {
		return nil, err
	}
	w := &writer{
		s: s, cfg: &s.cfg, clock: s.clock, wake: wk,
		timing: newTiming(),
		done:   make(chan struct{}),
		spec:   newSpecCounters(s.cfg.SpecDecodeTokens),
	}
	if s.cfg.TruthLog != "" {
		if w.truth, err = createTruthLog(s.cfg.TruthLog); err != nil {
			wk.close()
			return nil, err
		}
	}
	return w, nil
}

// submit hands st to the writer; any event loop may call it.
func (w *writer) submit(st *stream) {
	w.mu.Lock()
	w.incoming = append(w.incoming, st)
	// Waking under mu orders it before the writer's next look at
	// incoming, so the writer knows its timer was reset whenever it takes
	// a submitted stream.
	w.wake.notify()
	w.mu.Unlock()
}

// stop makes run return after flushing the truth log, and waits for it.
func (w *writer) stop() error {
	w.mu.Lock()
	w.stopping = true
	w.wake.notify()
	w.mu.Unlock()
	<-w.done
	w.wake.close()
	if w.truth != nil {
		for _, c := range w.closes {
			w.truth.closed(c)
		}
		w.truth.arrivals(w.arrivals)
		return w.truth.close()
	}
	return nil
}

// start runs the writer on its own goroutine. With WriterFIFOPriority the
// goroutine first locks its thread and makes it SCHED_FIFO; if that fails
// the writer does not run (stop still releases it) and start says why.
// The locked goroutine never unlocks, so its thread ends with it and no
// other goroutine ever runs at that priority.
func (w *writer) start() error {
	if w.cfg.WriterFIFOPriority == 0 {
		go w.run()
		return nil
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := setFIFOPriority(w.cfg.WriterFIFOPriority); err != nil {
			errc <- err
			close(w.done)
			return
		}
		errc <- nil
		w.run()
	}()
	return <-errc
}

func (w *writer) run() {
	defer close(w.done)
	for {
		w.mu.Lock()
		w.batch, w.incoming = w.incoming, w.batch[:0]
		stopping := w.stopping
		w.mu.Unlock()
		if stopping {
			return
		}
		// Every stream taken came with a notify, which re-armed the timer
		// to fire at once.
		timerReset := len(w.batch) > 0
		now := w.clock.nowNs()
		for i, st := range w.batch {
			w.accept(st, now)
			w.batch[i] = nil
		}
		var next int64
		if w.cfg.Mode == DecodeStep {
			next = w.runSteps()
		} else {
			next = w.runDue()
		}
		w.setTimer(next, timerReset)
		// A submit after the swap above may have armed the timer to fire
		// at once before setTimer overwrote it; look again before sleeping.
		w.mu.Lock()
		pending := len(w.incoming) > 0 || w.stopping
		w.mu.Unlock()
		if !pending {
			w.yieldNow()
			w.wake.wait()
			w.timerWoke()
		}
	}
}

// yieldInterval is how often the writer passes through the scheduler.
// sysmon preempts a goroutine that has not done so for 10 ms, or takes
// its P away in the middle of a system call, and then polls every 20 µs
// for the next millisecond; a blocking read(2) does not count. Each pass
// also wakes an idle P's thread, which is why it is not done every sleep.
const yieldInterval = 2 * time.Millisecond

// yieldNow passes through the scheduler if yieldInterval has gone by.
func (w *writer) yieldNow() {
	if now := w.clock.nowNs(); now-w.yieldNs >= int64(yieldInterval) {
		runtime.Gosched()
		w.yieldNs = now
	}
}

// setTimer makes sure the timer fires at nextNs (0: nothing is
// scheduled) or, in per-stream mode, up to TimerSlack after it. There the
// timer is periodic with the slack as its period: everything due between
// two ticks goes out in one wake-up, and while tokens are at most a slack
// apart the next tick already falls in the window, so no system call is
// needed. reset says the timer was re-armed behind the writer's back.
func (w *writer) setTimer(nextNs int64, reset bool) {
	if nextNs == 0 {
		if w.fireNs != 0 || reset {
			w.wake.arm(0)
			w.fireNs = 0
		}
		return
	}
	var period int64
	if w.cfg.Mode == PerStream {
		period = int64(w.cfg.TimerSlack)
	}
	if !reset {
		w.timerPassed(w.clock.nowNs())
		if w.fireNs >= nextNs && w.fireNs <= nextNs+period {
			return
		}
	}
	w.fireNs, w.periodNs = nextNs, period
	w.arms++
	w.wake.armEvery(nextNs, period)
}

// timerWoke notes that the writer woke from the timer. The clock is not
// trusted to tell whether a one-shot timer has gone off: a reading taken
// right after the expiry may still fall a hair before it, and believing
// the timer still armed would leave the writer asleep for good. A
// periodic timer keeps ticking, so there a misjudged tick costs at most
// one period of lateness.
func (w *writer) timerWoke() {
	if w.periodNs == 0 {
		w.fireNs = 0
		return
	}
	w.timerPassed(w.clock.nowNs())
}

// timerPassed brings fireNs up to date at nowNs: a periodic timer's next
// expiry is its first tick after nowNs; a one-shot timer that has gone
// off is disarmed.
func (w *writer) timerPassed(nowNs int64) {
	if w.fireNs == 0 || w.fireNs > nowNs {
		return
	}
	if w.periodNs == 0 {
		w.fireNs = 0
		return
	}
	w.fireNs += ((nowNs-w.fireNs)/w.periodNs + 1) * w.periodNs
}

// accept takes a new stream onto the schedule at now.
func (w *writer) accept(st *stream, now int64) {
	w.truth.request(st)
	w.s.stats.promptTokens.Add(uint64(st.promptTotal))
	if st.fault != nil && st.fault.Kind.hostile() {
		w.s.stats.running.Add(1)
		w.s.flood.add(st)
		return
	}
	if st.fault != nil && st.fault.Kind == FaultSlowHeaders {
		st.headersDueNs = st.arrivalNs + int64(st.fault.Delay)
	}
	w.s.stats.waiting.Add(1)
	if w.cfg.Mode == DecodeStep {
		w.waiting.Push(st)
		if w.nextStepNs == 0 {
			w.nextStepNs = now
		}
		return
	}
	if w.cfg.MaxNumSeqs > 0 && w.active >= w.cfg.MaxNumSeqs {
		w.waiting.Push(st)
		return
	}
	w.startPerStream(st, st.arrivalNs)
}

// prefillNs is the time from admission to a stream's first token.
func (w *writer) prefillNs(st *stream) int64 {
	d := int64(w.cfg.TTFT) + int64(w.cfg.PrefillPerToken)*int64(st.promptTotal-st.cachedTokens)
	return d + w.jitterNs(st.key, 0)
}

// jitterNs draws the uniform [0, Jitter) delay of event i of a key.
func (w *writer) jitterNs(key, i uint64) int64 {
	if w.cfg.Jitter <= 0 {
		return 0
	}
	return int64(unitFloat(mix(w.cfg.Seed, key, saltJitter+i<<8)) * float64(w.cfg.Jitter))
}

// startPerStream admits st at startNs (its arrival, or when a queued
// stream got a free slot): its first token is due TTFT + prefill later.
func (w *writer) startPerStream(st *stream, startNs int64) {
	w.s.stats.waiting.Add(-1)
	w.s.stats.running.Add(1)
	w.s.load.admitted(st, startNs)
	w.active++
	st.admittedNs = startNs
	st.readyNs = startNs + w.prefillNs(st)
	st.dueNs = st.readyNs
	if st.streaming && !st.headersSent {
		// Delayed headers are the stream's first event.
		st.dueNs = st.headersDueNs
	}
	w.due.push(dueEntry{dueNs: st.dueNs, st: st})
}

// runDue handles every per-stream event that is due and returns the time
// of the next one, or 0 if none is scheduled.
func (w *writer) runDue() int64 {
	for w.due.Len() > 0 {
		e := w.due.top()
		if now := w.clock.nowNs(); e.dueNs > now {
			return e.dueNs
		}
		if w.perStreamEvent(e.st, e.dueNs) {
			w.due.pop()
			w.finish(e.st)
		} else {
			w.due.replaceTop(e.st.dueNs)
		}
	}
	return 0
}

// perStreamEvent performs st's event intended for dueNs and sets its next
// due time; it returns true when the stream is over.
func (w *writer) perStreamEvent(st *stream, dueNs int64) (done bool) {
	if st.conn.isDead() {
		return true
	}
	if st.streaming && !st.headersSent {
		if !w.sendHeaders(st) {
			return true
		}
		if dueNs < st.readyNs {
			st.dueNs = st.readyNs
			return false
		}
	}
	k := st.next
	w.plan(st)
	if st.fault != nil && st.fault.Kind == FaultStall && st.carrying(st.faultAt) && !st.stalled {
		st.stalled = true
		st.dueNs = dueNs + int64(st.fault.Delay)
		return false
	}
	if w.emit(st, k, dueNs) {
		return true
	}
	st.dueNs = dueNs + int64(w.cfg.ITL) + w.jitterNs(st.key, uint64(k+1))
	return false
}

// runSteps runs every decode step that is due and returns the time of the
// next one, or 0 when no stream is running or waiting.
func (w *writer) runSteps() int64 {
	for w.nextStepNs != 0 {
		now := w.clock.nowNs()
		if w.nextStepNs > now {
			return w.nextStepNs
		}
		stepNs := w.nextStepNs
		w.step(stepNs)
		w.steps++
		if len(w.running) == 0 && w.waiting.Len() == 0 {
			w.nextStepNs = 0
			return 0
		}
		period := int64(w.cfg.ITL) + w.jitterNs(0, w.steps)
		w.nextStepNs = stepNs + period
		if now = w.clock.nowNs(); w.nextStepNs < now-period {
			// The step took longer than a whole period: start the next
			// one now instead of replaying the missed ones back to back.
			w.s.stats.stepOverruns.Add(1)
			w.nextStepNs = now
		}
	}
	return 0
}

// step is one decode step at stepNs: admit waiting streams while there is
// room, then give every running stream that is past its prefill its next
// token.
func (w *writer) step(stepNs int64) {
	for w.waiting.Len() > 0 && (w.cfg.MaxNumSeqs == 0 || len(w.running) < w.cfg.MaxNumSeqs) {
		st := w.waiting.Pop()
		w.s.stats.waiting.Add(-1)
		w.s.stats.running.Add(1)
		w.s.load.admitted(st, stepNs)
		st.admitStepNs = stepNs
		st.admittedNs = stepNs
		st.readyNs = stepNs + w.prefillNs(st)
		w.running = append(w.running, st)
	}
	for i := 0; i < len(w.running); {
		st := w.running[i]
		if !w.stepStream(st, stepNs) {
			i++
			continue
		}
		last := len(w.running) - 1
		w.running[i] = w.running[last]
		w.running[last] = nil
		w.running = w.running[:last]
		w.finish(st)
	}
}

// stepStream gives st its share of the step at stepNs; it returns true
// when the stream is over.
func (w *writer) stepStream(st *stream, stepNs int64) (done bool) {
	if st.conn.isDead() {
		return true
	}
	if st.streaming && !st.headersSent {
		if stepNs < st.headersDueNs {
			return false
		}
		if !w.sendHeaders(st) {
			return true
		}
	}
	// The admitting step is the prefill step: the first token comes on a
	// later one, and not before TTFT + prefill have passed.
	if stepNs <= st.admitStepNs || stepNs < st.readyNs {
		return false
	}
	k := st.next
	w.plan(st)
	if st.fault != nil && st.fault.Kind == FaultStall && st.carrying(st.faultAt) && !st.stalled {
		st.stalled = true
		st.stallNs = stepNs + int64(st.fault.Delay)
	}
	if stepNs < st.stallNs {
		return false
	}
	return w.emit(st, k, stepNs)
}

func (w *writer) sendHeaders(st *stream) bool {
	w.out = st.appendHeaders(w.out[:0])
	sentNs, ok := st.conn.send(w.out, &w.clock)
	st.headersSent = true
	w.truth.headers(st, sentNs)
	return ok
}

// emit sends token k of st (or the whole response, for a pooled request or
// the last token of a non-streaming one), intended for intendedNs. It
// returns true when the stream is over.
func (w *writer) emit(st *stream, k int, intendedNs int64) (done bool) {
	cn := st.conn
	n := w.plan(st)
	if f := st.fault; f != nil && st.carrying(st.faultAt) {
		switch f.Kind {
		case FaultResetMidStream:
			cn.reset()
			return true
		case FaultMalformedChunk:
			w.out = appendMalformedChunk(w.out[:0])
			cn.send(w.out, &w.clock)
			cn.close()
			return true
		case FaultErrorEvent:
			w.out = w.enc.appendStreamError(w.out[:0], st, k)
			cn.send(w.out, &w.clock)
			return true
		}
	}
	switch {
	case st.kind == kindPooled:
		sentNs, _ := cn.send(st.pooled, &w.clock)
		w.record(st, 0, sentNs, intendedNs)
		return true
	case st.streaming:
		w.out = w.enc.appendToken(w.out[:0], st, k)
	case st.last(k):
		w.out = w.enc.appendFullResponse(w.out[:0], st)
	default:
		w.advance(st)
		return false
	}
	sentNs, ok := cn.send(w.out, &w.clock)
	if !ok {
		return true
	}
	w.s.stats.tokens.Add(uint64(len(st.promptTokens) * n))
	w.s.load.generated(st, len(st.promptTokens)*n)
	last := st.last(k)
	if st.streaming {
		w.record(st, k, sentNs, intendedNs)
	} else {
		// The whole response goes out at once; it counts as event 0.
		w.s.stats.tokens.Add(uint64(len(st.promptTokens) * (st.outTokens - n)))
		w.s.load.generated(st, len(st.promptTokens)*(st.outTokens-n))
		w.record(st, 0, sentNs, intendedNs)
	}
	w.advance(st)
	return last
}

// record notes that token k of st went to the kernel at sentNs.
func (w *writer) record(st *stream, k int, sentNs, intendedNs int64) {
	tokens := 1 // a response sent whole is one event
	if st.streaming {
		tokens = st.carry
	}
	w.truth.token(st, k, tokens, sentNs, intendedNs)
	since := sentNs - st.lastSentNs
	if k == 0 {
		since = sentNs - st.arrivalNs
	}
	w.timing.token(sentNs-intendedNs, since, k == 0)
	if k == 0 {
		st.firstSentNs = sentNs
		w.s.load.ttft.observe(since)
	} else {
		w.s.load.itl.observe(since)
	}
	st.lastSentNs = sentNs
}

// finish takes st off the schedule and gives its connection back to the
// event loop.
func (w *writer) finish(st *stream) {
	w.s.stats.running.Add(-1)
	w.s.stats.finished.Add(1)
	w.s.load.finished(st, w.clock.nowNs())
	if st.firstSentNs != 0 {
		w.s.spans.add(spanRecord{
			traceID: st.traceID, traced: st.traced, seq: st.seq, requestID: st.requestID,
			arrivalNs: st.arrivalNs, admittedNs: st.admittedNs, readyNs: st.readyNs, firstNs: st.firstSentNs, lastNs: st.lastSentNs,
			promptTokens: st.promptTotal, completionTokens: st.outTokens * len(st.promptTokens),
		})
	}
	st.conn.endResponse(st.closeAfter)
	st.conn = nil
	if w.cfg.Mode == PerStream {
		w.active--
		if w.waiting.Len() > 0 {
			w.startPerStream(w.waiting.Pop(), w.clock.nowNs())
		}
	}
}

// dueHeap is a binary min-heap of streams by due time. The time is kept
// in the entry, so ordering 10,000 streams touches one 160 KB array
// rather than every stream's struct.
type dueHeap []dueEntry

type dueEntry struct {
	dueNs int64
	st    *stream
}

func (h dueHeap) Len() int { return len(h) }

// top returns the earliest entry; the heap must not be empty.
func (h dueHeap) top() dueEntry { return h[0] }

func (h *dueHeap) push(e dueEntry) {
	*h = append(*h, e)
	h.up(len(*h) - 1)
}

// pop removes the earliest entry.
func (h *dueHeap) pop() {
	old := *h
	n := len(old) - 1
	old[0] = old[n]
	old[n] = dueEntry{}
	*h = old[:n]
	if n > 0 {
		h.down(0)
	}
}

// replaceTop gives the earliest entry a new due time and restores order,
// one sift instead of a pop and a push.
func (h dueHeap) replaceTop(dueNs int64) {
	h[0].dueNs = dueNs
	h.down(0)
}

func (h dueHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if h[parent].dueNs <= h[i].dueNs {
			return
		}
		h[parent], h[i] = h[i], h[parent]
		i = parent
	}
}

func (h dueHeap) down(i int) {
	for {
		least := i
		if l := 2*i + 1; l < len(h) && h[l].dueNs < h[least].dueNs {
			least = l
		}
		if r := 2*i + 2; r < len(h) && h[r].dueNs < h[least].dueNs {
			least = r
		}
		if least == i {
			return
		}
		h[i], h[least] = h[least], h[i]
		i = least
	}
}
