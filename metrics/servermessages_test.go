package metrics

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestServerMessagesMergeAndTop(t *testing.T) {
	a, b := NewRecorder(Options{}), NewRecorder(Options{})
	var s Stream
	a.Begin(&s, 0, 1, 0, 0)
	for range 3 {
		s.ServerMessage([]byte("queue is full"))
	}
	s.ServerMessage([]byte("model overloaded"))
	a.EndStream(&s)
	b.Begin(&s, 1, 1, 0, 0)
	s.ServerMessage([]byte("queue is full"))
	s.ServerMessage([]byte("model overloaded"))
	s.ServerMessage([]byte("a rare one"))
	b.EndStream(&s)

	m := gatherTest(2, a, b).ServerMessages
	if m.Total() != 7 {
		t.Fatalf("total %d, want 7", m.Total())
	}
	top, rest := m.Top(2)
	want := []MessageCount{{"queue is full", 4}, {"model overloaded", 2}}
	if !slices.Equal(top, want) || rest != 1 {
		t.Errorf("Top(2) = %v, %d; want %v, 1", top, rest, want)
	}
	if top, rest := m.Top(10); len(top) != 3 || rest != 0 || top[2] != (MessageCount{"a rare one", 1}) {
		t.Errorf("Top(10) = %v, %d", top, rest)
	}
}

// TestServerMessagesBounded: a server that sends a new text with every
// message holds at most maxMessageTexts texts of maxMessageBytes each;
// the rest are still counted.
func TestServerMessagesBounded(t *testing.T) {
	var m ServerMessages
	long := strings.Repeat("x", 3*maxMessageBytes)
	for i := range 3 * maxMessageTexts {
		m.add([]byte(fmt.Sprintf("%d %s", i, long)))
	}
	if len(m.counts) != maxMessageTexts || m.Total() != 3*maxMessageTexts {
		t.Fatalf("%d texts held, total %d", len(m.counts), m.Total())
	}
	for text := range m.counts {
		if len(text) > maxMessageBytes {
			t.Fatalf("text of %d bytes held", len(text))
		}
	}
	top, rest := m.Top(3)
	if len(top) != 3 || rest != 3*maxMessageTexts-3 {
		t.Errorf("Top(3): %d texts, rest %d", len(top), rest)
	}
	// Merging two full sets keeps the bound and the total.
	var all ServerMessages
	all.merge(&m)
	var other ServerMessages
	other.add([]byte("another"))
	all.merge(&other)
	if len(all.counts) != maxMessageTexts || all.Total() != 3*maxMessageTexts+1 {
		t.Errorf("merged: %d texts, total %d", len(all.counts), all.Total())
	}
}

// TestServerMessageRepeatZeroAllocs: counting a text already seen
// allocates nothing.
func TestServerMessageRepeatZeroAllocs(t *testing.T) {
	var m ServerMessages
	msg := []byte("queue is full")
	m.add(msg)
	if n := testing.AllocsPerRun(100, func() { m.add(msg) }); n != 0 {
		t.Fatalf("%v allocs per repeated message, want 0", n)
	}
}
