package metrics

import (
	"cmp"
	"slices"
)

// ServerMessages counts the error messages a server sent inside streams it
// had answered 200 (`data: {"error": {"message": ...}}`, as a simulator
// with a full queue sends). Python ignores such a chunk: its request fails
// only for want of a token event, with the no-token text, so the results
// cannot say why; these counts, printed on stampede's health line, can.
// One per Recorder, touched by its shard's thread alone; the run's are
// merged after it.
type ServerMessages struct {
	counts map[string]*int
	total  int
	// dropped counts the messages whose text arrived after maxMessageTexts
	// distinct texts were already held.
	dropped int
}

// A misbehaving server must not grow a run's memory without bound: at
// most maxMessageTexts distinct texts are kept, each cut to
// maxMessageBytes.
const (
	maxMessageTexts = 64
	maxMessageBytes = 200
)

// MessageCount is one message text and how often it arrived.
type MessageCount struct {
	Text  string
	Count int
}

// add counts one message. It allocates only for a text not seen before.
func (m *ServerMessages) add(msg []byte) {
	if len(msg) > maxMessageBytes {
		msg = msg[:maxMessageBytes]
	}
	m.total++
	if n := m.counts[string(msg)]; n != nil {
		*n++
		return
	}
	if len(m.counts) >= maxMessageTexts {
		m.dropped++
		return
	}
	if m.counts == nil {
		m.counts = make(map[string]*int)
	}
	n := 1
	m.counts[string(msg)] = &n
}

// merge adds o's counts to m.
func (m *ServerMessages) merge(o *ServerMessages) {
	m.total += o.total
	m.dropped += o.dropped
	for text, n := range o.counts {
		switch p := m.counts[text]; {
		case p != nil:
			*p += *n
		case len(m.counts) >= maxMessageTexts:
			m.dropped += *n
		default:
			if m.counts == nil {
				m.counts = make(map[string]*int)
			}
			c := *n
			m.counts[text] = &c
		}
	}
}

// Total is how many messages arrived.
func (m *ServerMessages) Total() int { return m.total }

// Top returns up to n texts, the most frequent first (equal counts in text
// order), and how many messages the others account for.
func (m *ServerMessages) Top(n int) (top []MessageCount, rest int) {
	for text, c := range m.counts {
		top = append(top, MessageCount{text, *c})
	}
	slices.SortFunc(top, func(a, b MessageCount) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Text, b.Text)
	})
	shown := 0
	for i := range min(n, len(top)) {
		shown += top[i].Count
	}
	return top[:min(n, len(top))], m.total - shown
}

// ServerMessage counts an error message the server sent inside this
// request's stream.
func (s *Stream) ServerMessage(msg []byte) { s.rec.messages.add(msg) }
