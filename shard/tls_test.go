package shard

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"math/big"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/internal/tls13"
	"github.com/stampede-bench/stampede/sse"
	"golang.org/x/sys/unix"
)

// tlsPair connects a crypto/tls server to a client whose reads go through
// stampedConn, and returns both ends after the handshake, with the
// client's recordReader.
func tlsPair(tb testing.TB) (server *tls.Conn, raw *stampedConn, client *tls.Conn, rr *recordReader) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan *tls.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		sc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}})
		sc.Handshake()
		accepted <- sc
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	var reads, stamped atomic.Int64
	raw, err = newStampedConn(nc.(*net.TCPConn), true, &reads, &stamped)
	if err != nil {
		tb.Fatal(err)
	}
	keys := &keyLog{}
	client = tls.Client(raw, &tls.Config{InsecureSkipVerify: true, KeyLogWriter: keys})
	if err := client.Handshake(); err != nil {
		tb.Fatal(err)
	}
	readKey, err := tls13.NewKey(client.ConnectionState().CipherSuite, keys.server)
	if err != nil {
		tb.Fatal(err)
	}
	rr = &recordReader{open: tls13.Reader{Key: readKey}}
	server = <-accepted
	if server == nil {
		tb.Fatal("accept failed")
	}
	tb.Cleanup(func() { server.Close(); client.Close() })
	return server, raw, client, rr
}

// TestTLSRecordStamps: a record read as it arrives carries its own
// segment's kernel stamp; records that waited in the socket together
// share the stamp of the read that brought them, as events of one read do
// on plain TCP. It waits for what it needs rather than for a time: the
// kernel's switch to stamping (deferred work, slow on a loaded machine),
// and each record's arrival in the client's receive queue.
func TestTLSRecordStamps(t *testing.T) {
	keeper, err := openStampKeeper(stampSwitchWait)
	if err != nil {
		t.Skip("no kernel receive timestamps:", err)
	}
	defer keeper.close()
	if !keeper.stamping(30 * time.Second) {
		t.Fatal("the kernel did not stamp received packets within 30 s of a socket asking for it")
	}
	server, raw, client, rr := tlsPair(t)
	read := func(want string) int64 {
		t.Helper()
		p, err := rr.next(raw, client)
		if err != nil || string(p) != want {
			t.Fatalf("read %q, %v; want %q", p, err, want)
		}
		if raw.stampNs == 0 {
			t.Fatal("read carried no kernel stamp")
		}
		return raw.stampNs
	}
	server.Write([]byte("first"))
	first := read("first")
	server.Write([]byte("second"))
	second := read("second")
	if second <= first {
		t.Errorf("stamps %d then %d: a later segment must carry a later stamp", first, second)
	}
	// Each record a segment of its own (the first is queued before the
	// second is written), both waiting in the socket before the read.
	server.Write([]byte("third"))
	queued := awaitQueued(t, raw, 1)
	server.Write([]byte("fourth"))
	awaitQueued(t, raw, queued+1)
	third, fourth := read("third"), read("fourth")
	if third != fourth || third <= second {
		t.Errorf("stamps %d, %d after %d: records read together share the later stamp", third, fourth, second)
	}
}

// awaitQueued waits until at least n bytes wait in c's receive queue, and
// returns how many do.
func awaitQueued(t *testing.T, c *stampedConn, n int) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		queued := -1
		c.raw.Control(func(fd uintptr) { queued, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) })
		if queued >= n {
			return queued
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes in the receive queue after 30 s, want %d", queued, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// tlsEvents streams n token events as one TLS record each from server.
func tlsEvents(server *tls.Conn, n int, wire []byte) {
	for range n {
		if _, err := server.Write(wire); err != nil {
			return
		}
	}
}

// BenchmarkTLSEventPath measures one token event from a TLS record on a
// loopback socket to the recorder: recvmsg of header and body with the
// kernel stamp, decryption in recordReader, de-chunking, SSE parsing, recording. The
// server's sealing and writing runs on another goroutine and counts in
// allocs/op too.
func BenchmarkTLSEventPath(b *testing.B) {
	server, raw, client, rr := tlsPair(b)
	cn, rec := newBenchConn(b, sse.Completions)
	wire := chunkedEvent(`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}`)
	go tlsEvents(server, b.N, wire)
	b.ReportAllocs()
	b.SetBytes(int64(len(wire)))
	b.ResetTimer()
	for got := 0; got < b.N*len(wire); {
		if got/len(wire)%4096 == 0 {
			rec.Begin(&cn.stream, 0, 1, 0, 0)
		}
		p, err := rr.next(raw, client)
		if err != nil {
			b.Fatal(err)
		}
		got += len(p)
		if _, err := cn.http.Feed(p, raw.stampNs, cn); err != nil || cn.handlerErr != nil {
			b.Fatal(err, cn.handlerErr)
		}
	}
}

// TestTLSEventPathAllocatesNothing: reading and parsing a token event's
// record allocates nothing once the connection's buffers are warm.
func TestTLSEventPathAllocatesNothing(t *testing.T) {
	server, raw, client, rr := tlsPair(t)
	cn, _ := newBenchConn(t, sse.Completions)
	wire := chunkedEvent(`{"choices":[{"index":0,"text":"x"}]}`)
	const warm, runs = 64, 500
	// The server seals every record before the count starts, so its
	// allocations are not the client's.
	sealed := make(chan struct{})
	go func() {
		tlsEvents(server, warm+runs+1, wire)
		close(sealed)
	}()
	read := func() {
		p, err := rr.next(raw, client)
		if err != nil || len(p) != len(wire) {
			t.Fatalf("read %d bytes, %v; want one event of %d", len(p), err, len(wire))
		}
		cn.http.Feed(p, raw.stampNs, cn)
	}
	for range warm {
		read()
	}
	<-sealed
	if allocs := testing.AllocsPerRun(runs, read); allocs != 0 {
		t.Errorf("%.2f allocations per token event over TLS; want 0", allocs)
	}
	if cn.handlerErr != nil || cn.stream.TokenEvents() < warm+runs {
		t.Errorf("events %d, error %v", cn.stream.TokenEvents(), cn.handlerErr)
	}
}

// FuzzRecordReader writes arbitrary bytes onto the TCP stream after a real
// handshake (and the server's session ticket): the reader must fail
// cleanly, never panic or hang.
func FuzzRecordReader(f *testing.F) {
	f.Add([]byte{23, 3, 3, 0, 4, 1, 2, 3, 4})
	f.Add([]byte{23, 3, 3, 0xff, 0xff})
	f.Add([]byte{20, 3, 3, 0, 1, 1, 23, 3, 3, 0, 0})
	f.Add([]byte{22, 3, 3, 0, 2, 0, 0})
	f.Add([]byte{23, 3})
	f.Fuzz(func(t *testing.T, stream []byte) {
		server, raw, client, rr := tlsPair(t)
		nc := server.NetConn()
		go func() {
			nc.Write(stream)
			nc.(*net.TCPConn).CloseWrite()
		}()
		raw.SetDeadline(time.Now().Add(5 * time.Second))
		for range len(stream) + 2 {
			if _, err := rr.next(raw, client); err != nil {
				return
			}
		}
		t.Fatal("reader kept returning records from bytes that hold none")
	})
}

func TestULPListed(t *testing.T) {
	for _, c := range []struct {
		list string
		want bool
	}{{"mptcp\n", false}, {"espintcp mptcp tls\n", true}, {"", false}, {"tlsx", false}} {
		if got := ulpListed(c.list, "tls"); got != c.want {
			t.Errorf("ulpListed(%q) = %v, want %v", c.list, got, c.want)
		}
	}
}

// The key log keeps the two traffic secrets of crypto/tls's NSS lines,
// passes every line on, and leaves the secrets alone on lines of other
// labels or shapes.
func TestKeyLogTakesTrafficSecrets(t *testing.T) {
	var next bytes.Buffer
	k := &keyLog{next: &next}
	lines := []string{
		"CLIENT_HANDSHAKE_TRAFFIC_SECRET 0102 aaaa\n",
		"SERVER_TRAFFIC_SECRET_0 0102 00ff10\n",
		"CLIENT_TRAFFIC_SECRET_0 0102 abcd\n",
		"CLIENT_TRAFFIC_SECRET_0 0102 abcd extra\n",
		"SERVER_TRAFFIC_SECRET_0_X 0102 1111\n",
	}
	for _, l := range lines {
		if n, err := k.Write([]byte(l)); err != nil || n != len(l) {
			t.Fatalf("Write(%q) = %d, %v", l, n, err)
		}
	}
	if !bytes.Equal(k.server, []byte{0, 0xff, 0x10}) || !bytes.Equal(k.client, []byte{0xab, 0xcd}) {
		t.Errorf("secrets server %x client %x, want 00ff10 and abcd", k.server, k.client)
	}
	if next.String() != strings.Join(lines, "") {
		t.Errorf("passed on %q", next.String())
	}
	if _, err := k.Write([]byte("SERVER_TRAFFIC_SECRET_0 0102 zz\n")); err == nil {
		t.Error("a secret that is not hex was taken")
	}
}
