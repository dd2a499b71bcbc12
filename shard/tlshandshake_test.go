package shard

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/internal/tls13"
	"github.com/stampede-bench/stampede/shard/shardtest"
)

// rawServer accepts connections on loopback and hands each to serve on a
// goroutine of its own; conns receives them too.
func rawServer(t *testing.T, serve func(net.Conn)) (*shardtest.Server, chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	conns := make(chan net.Conn, 64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
			go serve(c)
		}
	}()
	return &shardtest.Server{Addr: netip.MustParseAddrPort(ln.Addr().String())}, conns
}

// TestTLSHandshakeStallEndsAndCloses: a server that takes the ClientHello
// and never answers: each request fails at its deadline, and its socket,
// which the handshake still had, is closed once the cancelled handshake
// came back (the server reads its end).
func TestTLSHandshakeStallEndsAndCloses(t *testing.T) {
	srv, conns := rawServer(t, func(c net.Conn) { io.Copy(io.Discard, c) })
	const n = 3
	data, health := runPaths(t, srv, []string{"/ok/1", "/ok/1", "/ok/1"},
		run{streaming: true, timeout: 200 * time.Millisecond, tls: PrepareTLS(&tls.Config{InsecureSkipVerify: true}, n)})
	for _, r := range data.Results {
		if r.Success || r.Error != "request timed out after 200ms" {
			t.Errorf("request %d: success %v, error %q", r.Index, r.Success, r.Error)
		}
	}
	if h := health[0]; h.Connections != n {
		t.Errorf("%d connections; want %d", h.Connections, n)
	}
	for range n {
		c := <-conns
		c.SetReadDeadline(time.Now().Add(time.Minute))
		var b [1]byte
		for {
			if _, err := c.Read(b[:]); err != nil {
				if !errors.Is(err, io.EOF) {
					t.Errorf("server side of a stalled handshake: %v; want the client's close", err)
				}
				break
			}
		}
	}
}

// TestTLSHandshakeServerCloses: a server that closes the connection on
// the ClientHello, or answers it with bytes that are not TLS: the requests
// fail with the handshake's reason, on the loop.
func TestTLSHandshakeServerCloses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(net.Conn)
		want  string
	}{
		{"close", func(c net.Conn) {
			c.Read(make([]byte, 4096))
			c.Close()
		}, "EOF"},
		{"not TLS", func(c net.Conn) {
			c.Read(make([]byte, 4096))
			c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"))
		}, "does not look like a TLS handshake"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := rawServer(t, tc.serve)
			data, _ := runPaths(t, srv, []string{"/ok/1", "/ok/1"},
				run{streaming: true, tls: PrepareTLS(&tls.Config{InsecureSkipVerify: true}, 2)})
			for _, r := range data.Results {
				if r.Success || !strings.HasPrefix(r.Error, "TLS handshake with "+srv.Addr.String()+": ") || !strings.Contains(r.Error, tc.want) {
					t.Errorf("request %d: success %v, error %q; want the handshake's failure (%s)", r.Index, r.Success, r.Error, tc.want)
				}
			}
		})
	}
}

// checkPipeReads feeds data to a pipe in the chunks put gives and reads it
// back in reads of the sizes sizes gives: every byte comes out once, in
// order, and no read goes past the end of the record it began in (records
// as their headers say, an independent walk of data).
func checkPipeReads(t *testing.T, data []byte, put, sizes []int) {
	p := newHSPipe(-1, nil)
	p.tokens = newTokenSet(1)
	for i, rest := 0, data; len(rest) > 0; i++ {
		n := len(rest)
		if len(put) > 0 {
			n = min(n, max(1, put[i%len(put)]))
		}
		p.put(rest[:n], 0)
		rest = rest[n:]
	}
	p.end(io.EOF)
	// Record ends, from the headers.
	var ends []int
	for at := 0; at+tls13.HeaderLen <= len(data); {
		at += tls13.HeaderLen + int(binary.BigEndian.Uint16(data[at+3:]))
		ends = append(ends, at)
	}
	var got []byte
	for i := 0; ; i++ {
		size := 1 << 14
		if len(sizes) > 0 {
			size = max(1, sizes[i%len(sizes)])
		}
		b := make([]byte, size)
		n, err := p.Read(b)
		if n > 0 {
			start := len(got)
			got = append(got, b[:n]...)
			for _, e := range ends {
				if e > start && e < len(got) {
					t.Fatalf("a read of [%d, %d) crossed the record end at %d", start, len(got), e)
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatal("a read returned nothing and no error")
		}
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, not the %d put", len(got), len(data))
	}
}

func TestHSPipeReadsEndAtRecords(t *testing.T) {
	rec := func(size int) []byte {
		b := append([]byte{22, 3, 3, byte(size >> 8), byte(size)}, bytes.Repeat([]byte{7}, size)...)
		return b
	}
	data := bytes.Join([][]byte{rec(90), rec(0), rec(1), rec(5000), rec(3)}, nil)
	checkPipeReads(t, data, nil, nil)
	checkPipeReads(t, data, []int{1, 7, 100}, []int{3, 1 << 14, 2})
	checkPipeReads(t, data[:len(data)-2], []int{4096}, []int{512}) // a record cut short by the end
}

// FuzzHSPipeRecords: whatever a server sends during a handshake, in
// whatever pieces, the pipe hands crypto/tls every byte in order and never
// more than the rest of the record being read.
func FuzzHSPipeRecords(f *testing.F) {
	f.Add([]byte{22, 3, 3, 0, 2, 1, 2, 23, 3, 3, 0, 0, 21, 3, 3, 0, 1, 9}, uint8(3), uint8(2))
	f.Add([]byte{22, 3, 3, 0xff, 0xff, 1}, uint8(1), uint8(1))
	f.Add([]byte{}, uint8(0), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, put, size uint8) {
		checkPipeReads(t, data, []int{int(put), int(put) * 3}, []int{int(size), 1 << 14})
	})
}

// The pipe takes at most maxHandshakeBytes not yet read: a server cannot
// make the loop buffer without bound while a handshake waits for its turn.
func TestHSPipeBound(t *testing.T) {
	p := newHSPipe(-1, nil)
	chunk := make([]byte, 64<<10)
	n := 0
	for p.put(chunk, 0) {
		if n += len(chunk); n > 2*maxHandshakeBytes {
			t.Fatalf("the pipe took %d bytes", n)
		}
	}
	if n > maxHandshakeBytes || n+len(chunk) <= maxHandshakeBytes {
		t.Errorf("the pipe refused a read after %d bytes; want it at the bound, %d", n, maxHandshakeBytes)
	}
}
