package shard

import (
	"encoding/binary"
	"testing"

	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/sse"
	"golang.org/x/sys/unix"
)

// outcome is what a response did to a connection's request.
type outcome struct {
	status, events int
	done, failed   bool
}

// feedResponse runs response bytes, split into the given pieces, through
// the connection's parse path, as onReadable would.
func feedResponse(c *conn, rec *metrics.Recorder, pieces ...[]byte) outcome {
	rec.Begin(&c.stream, 0, 1, 0, 0)
	c.beginRequest(&Request{})
	var failed bool
	for i, p := range pieces {
		_, err := c.http.Feed(p, int64(i), c)
		if err != nil || c.handlerErr != nil {
			failed = true
			break
		}
		if c.done {
			break
		}
	}
	if !failed && c.done && c.streaming {
		failed = c.sse.Flush(c) != nil
	}
	return outcome{c.status, c.stream.TokenEvents(), c.done, failed}
}

// FuzzResponsePath feeds arbitrary response bytes through httpwire → sse →
// decoder → recorder, whole and split in two, and requires the same
// outcome: where reads split a response must not change what is measured.
func FuzzResponsePath(f *testing.F) {
	head := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	f.Add([]byte(head+"1b\r\ndata: {\"choices\":[{\"text\":\"a\"}]}\r\n\r\n"+"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"), 30)
	f.Add([]byte(head+"zz\r\n"), 3)
	f.Add([]byte("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 2\r\n\r\nno"), 20)
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\ndata: {\"choices\":[{\"text\":null}]}\n\n"), 50)
	f.Add([]byte(head+"5\r\n: hi\n\r\n0\r\n\r\n"), 1)
	c1, rec1 := newBenchConn(f, sse.Completions)
	c2, rec2 := newBenchConn(f, sse.Completions)
	f.Fuzz(func(t *testing.T, resp []byte, split int) {
		if split < 0 || split > len(resp) {
			return
		}
		whole := feedResponse(c1, rec1, resp)
		parts := feedResponse(c2, rec2, resp[:split], resp[split:])
		if whole != parts {
			t.Errorf("split at %d changed the outcome: whole %+v, split %+v", split, whole, parts)
		}
	})
}

// FuzzRxTimestamp parses arbitrary control-message buffers: it must never
// read outside the buffer, and must find a well-formed SCM_TIMESTAMPING.
func FuzzRxTimestamp(f *testing.F) {
	f.Add(cmsgTimestamp(1_700_000_000, 123456789))
	f.Add([]byte{})
	f.Add(make([]byte, unix.SizeofCmsghdr))
	f.Fuzz(func(t *testing.T, oob []byte) {
		buf := make([]byte, len(oob)+8)
		copy(buf, oob)
		parseRxTimestamp(buf[:len(oob)])
	})
}

func TestParseRxTimestamp(t *testing.T) {
	if got := parseRxTimestamp(cmsgTimestamp(1_700_000_000, 123456789)); got != 1_700_000_000_123_456_789 {
		t.Errorf("parsed %d", got)
	}
	if got := parseRxTimestamp(cmsgTimestamp(0, 0)); got != 0 {
		t.Errorf("zero stamp parsed as %d", got)
	}
	b := cmsgTimestamp(5, 6)
	binary.NativeEndian.PutUint64(b, 1000) // length beyond the buffer
	if got := parseRxTimestamp(b); got != 0 {
		t.Errorf("overlong cmsg parsed as %d", got)
	}
}

// cmsgTimestamp builds the control message the kernel sends with
// SO_TIMESTAMPING_NEW: a header and three timespecs, the first software.
func cmsgTimestamp(sec, nsec int64) []byte {
	b := make([]byte, unix.SizeofCmsghdr+48)
	binary.NativeEndian.PutUint64(b[0:], uint64(len(b)))
	binary.NativeEndian.PutUint32(b[8:], unix.SOL_SOCKET)
	binary.NativeEndian.PutUint32(b[12:], unix.SO_TIMESTAMPING_NEW)
	binary.NativeEndian.PutUint64(b[16:], uint64(sec))
	binary.NativeEndian.PutUint64(b[24:], uint64(nsec))
	return b
}
