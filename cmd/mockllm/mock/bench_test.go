package mock

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// benchStream is a long streaming chat completion as the writer sees it.
func benchStream(s *Server, cn *conn) *stream {
	st := &stream{conn: cn, kind: kindChat, seq: 1, key: 1, streaming: true, includeUsage: true,
		promptTokens: []int{100}, promptTotal: 100, outTokens: 1 << 62, finishReason: "length", headersSent: true}
	st.prefix = s.appendPrefix(nil, "chatcmpl-", "chat.completion.chunk", s.clock.nowNs(), st)
	st.prefix = append(st.prefix, `"choices":[`...)
	return st
}

func benchServer() *Server {
	s := &Server{clock: newMonoClock()}
	s.cfg.setDefaults()
	s.model, _ = appendJSONString(nil, s.cfg.Model)
	s.load.init()
	return s
}

// BenchmarkAppendToken is the encoding of one token event: JSON chunk, SSE
// framing, HTTP chunk framing.
func BenchmarkAppendToken(b *testing.B) {
	s := benchServer()
	st := benchStream(s, nil)
	var enc encoder
	var out []byte
	b.ReportAllocs()
	k := 1
	for b.Loop() {
		out = enc.appendToken(out[:0], st, k)
		k++
	}
	b.SetBytes(int64(len(out)))
}

// BenchmarkEmitToken is the writer's whole per-token path: encode, read
// the clock, write(2) to a socket, truth-log record, histograms.
func BenchmarkEmitToken(b *testing.B) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	peer := os.NewFile(uintptr(fds[1]), "peer")
	defer peer.Close()
	defer unix.Close(fds[0])
	go io.Copy(io.Discard, peer)

	s := benchServer()
	w := &writer{s: s, cfg: &s.cfg, clock: s.clock, timing: newTiming()}
	if w.truth, err = createTruthLog(filepath.Join(b.TempDir(), "truth.log")); err != nil {
		b.Fatal(err)
	}
	defer w.truth.close()
	st := benchStream(s, &conn{fd: fds[0]})
	b.ReportAllocs()
	k := 1
	st.next = 1
	st.lastSentNs = s.clock.nowNs()
	for b.Loop() {
		if w.emit(st, k, s.clock.nowNs()) {
			b.Fatal("stream ended")
		}
		k++
	}
}

func BenchmarkMockTokenizerEncode(b *testing.B) {
	tok := NewMockTokenizer()
	text := "the model of the stream is a server that has been in the queue for some time, naïvely"
	var ids []int32
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		ids = tok.Encode(ids[:0], text, true)
	}
}
