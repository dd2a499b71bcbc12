package multiturn

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"time"

	"github.com/stampede-bench/stampede/bench/endpoint"
	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/metrics"
)

// Plan is what a run sends: the conversations, how many of their turns,
// and each turn's output limit, all fixed before the clock starts. Only
// the answers (and so the history) come during the run.
type Plan struct {
	Conversations []Conversation
	// Turns is how many user turns of each conversation are sent
	// (--max-turns applied).
	Turns []int
	// MaxTokens is each conversation's max_tokens per turn; -1 sends none.
	MaxTokens [][]int
	Model     string
	IgnoreEOS bool
}

// Sender is the transport side of a run: how a body becomes a request,
// the engine's settings, and how a started run is waited for.
type Sender interface {
	Frame(body []byte, extra ...plan.Header) ([]byte, error)
	EngineConfig(n int) engine.Config
}

// Turn is one request of a run: which conversation, which turn, which
// client sent it.
type Turn struct {
	Conversation int // index in Plan.Conversations
	Index        int // 0-based user turn
	Client       int
}

// Outcome is what a run measured.
type Outcome struct {
	// Turns[i] is what engine position i carried; the i-th request of Result.Data.Log
	// is how it went. Only the positions sent are listed.
	Turns  []Turn
	Result *engine.Result
	// Answered holds each conversation's messages as sent, with the
	// answers that came back (or the dataset's, --history dataset).
	Answered []Conversation
	// Completed counts conversations whose every planned turn succeeded.
	Completed int
}

// ended is what the driver hears of a request that ended.
type ended struct {
	pos     int
	success bool
	text    string
}

// session is one conversation in progress.
type session struct {
	conv    *Conversation
	history []Message // what the next turn's request starts with
	next    int       // next user turn to send
	turns   int
	readyAt time.Time // its think time ends
	failed  bool
}

// client sends one request at a time, over its open conversations.
type client struct {
	id     int
	active []int // sessions, in round-robin order
	busy   bool
	nextAt time.Time // --request-rate's pause ends
	rng    *rand.Rand
}

// driver runs the conversations through a Feed run of the engine: one
// goroutine decides every release, so releases follow the engine's
// single-producer rule.
type driver struct {
	opts     *Options
	plan     *Plan
	sender   Sender
	runner   *engine.Runner
	ends     chan ended
	sessions []session
	clients  []client
	queue    []int // conversations not yet opened, in order
	turns    []Turn
	sentAt   []time.Time // by position: when the turn was released
	inFlight int
	total    int
	stopping bool
	seed     uint64
}

// Run drives plan's conversations and returns what they measured. A
// cancelled ctx stops new turns; what finished is kept (the engine gives
// the requests in flight its grace, and a hard stop aborts them).
func Run(ctx context.Context, opts *Options, plan *Plan, sender Sender) (*Outcome, error) {
	d := &driver{opts: opts, plan: plan, sender: sender, seed: uint64(opts.Serve.Seed)}
	for _, n := range plan.Turns {
		d.total += n
	}
	if opts.MaxNumRequests > 0 {
		d.total = min(d.total, opts.MaxNumRequests)
	}
	d.ends = make(chan ended, d.total)
	d.sessions = make([]session, len(plan.Conversations))
	for i := range plan.Conversations {
		c := &plan.Conversations[i]
		d.sessions[i] = session{conv: c, turns: plan.Turns[i]}
		if len(c.Messages) > 0 && c.Messages[0].Role == "system" {
			d.sessions[i].history = []Message{c.Messages[0]}
		}
		d.queue = append(d.queue, i)
	}
	d.clients = make([]client, opts.NumClients)
	for i := range d.clients {
		// Each client its own stream, as each of vLLM's client processes
		// reseeds with seed + id + 1.
		d.clients[i] = client{id: i, rng: rand.New(rand.NewPCG(d.seed+uint64(i)+1, 0x636c69656e74))}
	}
	ec := sender.EngineConfig(d.total)
	ec.Feed = true
	ec.KeepText = true
	ec.MaxConcurrency = opts.NumClients
	ec.OnEnd = func(r *metrics.RequestResult) {
		d.ends <- ended{pos: r.Index, success: r.Success, text: r.GeneratedText}
	}
	runner, err := engine.Start(ctx, ec)
	if err != nil {
		return nil, err
	}
	d.runner = runner
	d.loop(ctx)
	runner.EndFeed()
	res, err := endpoint.WaitRun(ctx, runner)
	if err != nil {
		return nil, err
	}
	sent := runner.Submitted()
	res.Data.Log = res.Data.Log.Head(sent)
	out := &Outcome{Turns: d.turns, Result: res}
	for i := range d.sessions {
		s := &d.sessions[i]
		out.Answered = append(out.Answered, Conversation{ID: s.conv.ID, Messages: s.history})
		if !s.failed && s.next >= s.turns && s.turns > 0 {
			out.Completed++
		}
	}
	return out, nil
}

// loop releases turns until every conversation is done, the request
// budget is spent, early stop applies, or ctx is cancelled; it returns
// with nothing in flight, except after a cancellation.
func (d *driver) loop(ctx context.Context) {
	select {
	case <-d.runner.Started():
	case <-ctx.Done():
		return
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wake := d.release(time.Now())
		if d.inFlight == 0 && wake.IsZero() {
			return
		}
		timer.Stop()
		var tick <-chan time.Time
		if !wake.IsZero() {
			timer.Reset(max(0, time.Until(wake)))
			tick = timer.C
		}
		select {
		case e := <-d.ends:
			d.end(e, time.Now())
		case <-tick:
		case <-ctx.Done():
			return
		}
	}
}

// release sends a turn for every idle client that has one ready and
// returns the earliest time another may become ready (zero: none will
// without an answer first).
func (d *driver) release(now time.Time) (wake time.Time) {
	later := func(t time.Time) {
		if wake.IsZero() || t.Before(wake) {
			wake = t
		}
	}
	perClient := d.opts.MaxActiveConversations / d.opts.NumClients
	for ci := range d.clients {
		c := &d.clients[ci]
		for len(c.active) < perClient && len(d.queue) > 0 && !d.stopping {
			si := d.queue[0]
			d.queue = d.queue[1:]
			if d.sessions[si].turns > 0 {
				c.active = append(c.active, si)
			}
		}
		if len(c.active) == 0 && !d.opts.NoEarlyStop {
			// vLLM's early stop: once a client has no work left, the
			// others stop too rather than run on with fewer clients.
			d.stopping = true
		}
		if c.busy || d.stopping || len(d.turns) >= d.total || len(c.active) == 0 {
			continue
		}
		if now.Before(c.nextAt) {
			later(c.nextAt)
			continue
		}
		k := d.pick(c, now)
		if k < 0 {
			for _, si := range c.active {
				later(d.sessions[si].readyAt)
			}
			continue
		}
		si := c.active[k]
		if d.opts.Sampling == "round_robin" {
			// To the back of the line.
			c.active = append(append(c.active[:k:k], c.active[k+1:]...), si)
		}
		if d.submit(c, si) {
			c.busy = true
		}
	}
	return wake
}

// pick chooses which of c's conversations goes next: the first ready one
// in round-robin order, or a random ready one; -1 when none is ready.
func (d *driver) pick(c *client, now time.Time) int {
	var ready []int
	for k, si := range c.active {
		if !now.Before(d.sessions[si].readyAt) {
			if d.opts.Sampling == "round_robin" {
				return k
			}
			ready = append(ready, k)
		}
	}
	if len(ready) == 0 {
		return -1
	}
	return ready[c.rng.IntN(len(ready))]
}

// submit sends session si's next turn for client c; false if it could not
// be built (the conversation is then dropped as failed).
func (d *driver) submit(c *client, si int) bool {
	s := &d.sessions[si]
	wire, err := d.request(si)
	if err == nil {
		_, err = d.runner.Submit(engine.Request{Wire: wire})
	}
	if err != nil {
		s.failed = true
		d.close(c, si)
		return false
	}
	d.turns = append(d.turns, Turn{Conversation: si, Index: s.next, Client: c.id})
	d.sentAt = append(d.sentAt, time.Now())
	d.inFlight++
	return true
}

// request encodes session si's next turn: its history, then the question.
func (d *driver) request(si int) ([]byte, error) {
	s := &d.sessions[si]
	u, _, _ := s.conv.turnAt(s.next)
	msgs := append(s.history[:len(s.history):len(s.history)], s.conv.Messages[u])
	if d.opts.NoHistory {
		msgs = msgs[len(msgs)-1:]
	}
	body := chatBody{Model: d.plan.Model, Messages: msgs, Stream: true, StreamOptions: &streamOptions{IncludeUsage: true}}
	if mt := d.plan.MaxTokens[si][s.next]; mt >= 0 {
		body.MaxTokens = &mt
	}
	if d.opts.LimitMinTokens > 0 {
		body.MinTokens = &d.opts.LimitMinTokens
	}
	if d.plan.IgnoreEOS {
		body.IgnoreEOS = &d.plan.IgnoreEOS
	}
	if d.opts.SendConversationID {
		body.ConversationID = s.conv.ID
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	var extra []plan.Header
	if d.opts.SessionHeader != "" {
		extra = append(extra, plan.Header{Key: d.opts.SessionHeader, Value: s.conv.ID})
	}
	return d.sender.Frame(data, extra...)
}

// chatBody is a chat completions request, keys in the order vLLM's
// multi-turn tool sends them.
type chatBody struct {
	Model          string         `json:"model"`
	Messages       []Message      `json:"messages"`
	ConversationID string         `json:"conversation_id,omitempty"`
	Stream         bool           `json:"stream"`
	StreamOptions  *streamOptions `json:"stream_options,omitempty"`
	MaxTokens      *int           `json:"max_tokens,omitempty"`
	MinTokens      *int           `json:"min_tokens,omitempty"`
	IgnoreEOS      *bool          `json:"ignore_eos,omitempty"`
}

// streamOptions asks for usage: the server's prompt and output token
// counts are the lengths reported.
type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// end takes a turn's end: the answer joins the history and the
// conversation waits its think time, or closes when done or failed.
func (d *driver) end(e ended, now time.Time) {
	if e.pos >= len(d.turns) {
		return
	}
	t := d.turns[e.pos]
	d.inFlight--
	c := &d.clients[t.Client]
	c.busy = false
	if rate := d.opts.Serve.RequestRate; rate > 0 && rate < 1e308 {
		// vLLM's per-client Poisson pacing: a pause drawn with mean
		// 1/rate less the request's own duration (none once it took longer).
		if mean := 1/rate - now.Sub(d.sentAt[e.pos]).Seconds(); mean > 0 {
			c.nextAt = now.Add(time.Duration(c.rng.ExpFloat64() * mean * float64(time.Second)))
		}
	}
	s := &d.sessions[t.Conversation]
	if !e.success {
		s.failed = true
		d.close(c, t.Conversation)
		return
	}
	u, dataset, hasAnswer := s.conv.turnAt(t.Index)
	answer := e.text
	if d.opts.History == "dataset" && hasAnswer {
		answer = dataset
	}
	s.history = append(s.history, s.conv.Messages[u], Message{Role: "assistant", Content: answer})
	s.next++
	if s.next >= s.turns {
		d.close(c, t.Conversation)
		return
	}
	s.readyAt = now.Add(d.thinkTime(t.Conversation, t.Index))
}

// thinkTime draws the pause after turn k of conversation ci from a stream
// of its own, so that a seed gives each turn the same pause whatever the
// order answers came in.
func (d *driver) thinkTime(ci, k int) time.Duration {
	if d.opts.ThinkTime == nil {
		return 0
	}
	r := rand.New(rand.NewPCG(d.seed, uint64(ci)<<20|uint64(k)))
	sec := d.opts.ThinkTime.Sample(r, 1)[0]
	return time.Duration(max(0, sec) * float64(time.Second))
}

// close removes session si from c's open conversations.
func (d *driver) close(c *client, si int) {
	for k, v := range c.active {
		if v == si {
			c.active = append(c.active[:k], c.active[k+1:]...)
			return
		}
	}
}
