package sse

import (
	"bytes"
	"testing"
)

// benchEvent returns the i-th token event of each golden stream as the
// server frames it ("data: {...}\n\n").
func benchEvent(render func([]string) []byte, i int) []byte {
	events := bytes.SplitAfter(render(goldenTokens), []byte("\n\n"))
	return events[i]
}

// BenchmarkParseEvent: one vLLM completions token event per read, the
// common case for a stream at decode speed.
func BenchmarkParseEvent(b *testing.B) {
	ev := benchEvent(vllmCompletionsStream, 1)
	var p Parser
	var h countHandler
	b.SetBytes(int64(len(ev)))
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Feed(ev, &h); err != nil {
			b.Fatal(err)
		}
	}
	if h.events == 0 {
		b.Fatal("no events")
	}
}

// BenchmarkParseEventSplit: the same event arriving in three reads, which
// exercises the carried partial line.
func BenchmarkParseEventSplit(b *testing.B) {
	ev := benchEvent(vllmCompletionsStream, 1)
	a, m := len(ev)/3, 2*len(ev)/3
	var p Parser
	var h countHandler
	b.SetBytes(int64(len(ev)))
	b.ReportAllocs()
	for b.Loop() {
		_ = p.Feed(ev[:a], &h)
		_ = p.Feed(ev[a:m], &h)
		if err := p.Feed(ev[m:], &h); err != nil {
			b.Fatal(err)
		}
	}
}

func benchmarkDecode(b *testing.B, kind Kind, render func([]string) []byte) {
	ev := benchEvent(render, 2)
	data := bytes.TrimSuffix(bytes.TrimPrefix(ev, []byte("data: ")), []byte("\n\n"))
	d := NewDecoder(kind)
	var c Chunk
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := d.Decode(data, &c); err != nil {
			b.Fatal(err)
		}
	}
	if !c.Token || len(c.Text) == 0 {
		b.Fatalf("decoded %+v, want a token with text", c)
	}
}

func BenchmarkDecodeCompletions(b *testing.B) {
	benchmarkDecode(b, Completions, vllmCompletionsStream)
}

func BenchmarkDecodeChat(b *testing.B) { benchmarkDecode(b, Chat, vllmChatStream) }
