package spans

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
)

func dial(t *testing.T, r *Receiver) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// grpcExport sends body as one TraceService/Export over gRPC, the
// message's bytes as they are, with md's metadata.
func grpcExport(t testing.TB, r *Receiver, body []byte, md ...string) error {
	t.Helper()
	conn, err := grpc.NewClient(r.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if len(md) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, md...)
	}
	var answer rawBytes
	return conn.Invoke(ctx, collectortrace.TraceService_Export_FullMethodName, rawBytes(body), &answer, grpc.ForceCodecV2(rawCodec{}))
}

// rawBytes and rawCodec send a message's bytes as they are.
type rawBytes []byte

type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.(rawBytes))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*rawBytes) = data.Materialize()
	return nil
}

// TestReceiverOverGRPC: an export over gRPC is decoded from its bytes as
// over HTTP.
func TestReceiverOverGRPC(t *testing.T) {
	r := newReceiver(t, Options{MaxSpans: 10})
	if err := grpcExport(t, r, exportOf([16]byte{1}, [16]byte{2})); err != nil {
		t.Fatal(err)
	}
	if err := grpcExport(t, r, []byte("\x0a\xff\xff\xff\xff\x0f")); status.Code(err) != codes.InvalidArgument {
		t.Errorf("a malformed message: %v, want InvalidArgument", err)
	}
	got := r.Finish(context.Background(), time.Second, atLeast(2))
	if len(got.Spans) != 2 || got.Counts.Exports != 1 || got.Counts.Malformed != 1 || got.Spans[1].TraceID != [16]byte{2} {
		t.Errorf("counts %+v, spans %+v", got.Counts, got.Spans)
	}
}

// TestReceiverToken: with Options.Auth an export without the header is
// refused on both protocols before its body is read (HTTP 401, gRPC
// Unauthenticated) and counted; with it, taken. A bearer scheme matches
// in any case.
func TestReceiverToken(t *testing.T) {
	r := newReceiver(t, Options{MaxSpans: 10, Auth: &Auth{Header: "Authorization", Value: "Bearer s3cret"}})
	body := exportOf([16]byte{1})
	for _, c := range []struct {
		header []string
		want   int
	}{
		{nil, http.StatusUnauthorized},
		{[]string{"Authorization", "Bearer wrong"}, http.StatusUnauthorized},
		{[]string{"Authorization", "s3cret"}, http.StatusUnauthorized},
		{[]string{"Authorization", "Bearer s3cret"}, http.StatusOK},
		{[]string{"Authorization", "bearer s3cret"}, http.StatusOK},
	} {
		if code := post(t, r, body, c.header...); code != c.want {
			t.Errorf("header %q: answered %d, want %d", c.header, code, c.want)
		}
	}
	if err := grpcExport(t, r, body); status.Code(err) != codes.Unauthenticated {
		t.Errorf("gRPC without the token: %v, want Unauthenticated", err)
	}
	if err := grpcExport(t, r, body, "authorization", "Bearer s3cret"); err != nil {
		t.Errorf("gRPC with the token: %v", err)
	}
	got := r.Finish(context.Background(), time.Second, atLeast(3))
	if got.Counts.Unauthenticated != 4 || got.Counts.Exports != 3 || !got.TokenRequired || got.Unprotected {
		t.Errorf("counts %+v, token %v, unprotected %v: want 4 refused, 3 taken", got.Counts, got.TokenRequired, got.Unprotected)
	}
}

// TestReceiverUnprotected: a receiver beyond loopback without a token
// says so; on loopback it does not.
func TestReceiverUnprotected(t *testing.T) {
	open, err := Listen(":0", Options{MaxSpans: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := open.Finish(context.Background(), 0, atLeast(0)); !got.Unprotected {
		t.Error("a receiver on every address is not reported unprotected")
	}
	if got := newReceiver(t, Options{MaxSpans: 1}).Finish(context.Background(), 0, atLeast(0)); got.Unprotected {
		t.Error("a receiver on loopback is reported unprotected")
	}
}

// bomb is an ExportTraceServiceRequest of n empty spans: two bytes each.
func bomb(n int) []byte {
	scope := bytes.Repeat(protowire.AppendBytes(protowire.AppendTag(nil, fieldSpans, protowire.BytesType), nil), n)
	rs := protowire.AppendBytes(protowire.AppendTag(nil, fieldScopeSpans, protowire.BytesType), scope)
	return protowire.AppendBytes(protowire.AppendTag(nil, fieldResourceSpans, protowire.BytesType), rs)
}

// allocated is the bytes the process allocated while f ran.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestReceiverRefusesASpanBomb: an export of two million empty spans (4
// MiB, 4 kB of gzip) is refused as too large once its spans are counted
// in its bytes, before one is built, over both protocols; what the
// receiver allocates for it stays a small multiple of the bytes.
func TestReceiverRefusesASpanBomb(t *testing.T) {
	r := newReceiver(t, Options{MaxSpans: 100})
	raw := bomb(2 << 20)
	zipped := gzipped(raw)
	var code int
	if n := allocated(func() { code = post(t, r, zipped, "Content-Encoding", "gzip") }); n > 24<<20 {
		t.Errorf("refusing a gzip bomb of %d bytes (%d inflated) allocated %d MB", len(zipped), len(raw), n>>20)
	}
	if code != http.StatusRequestEntityTooLarge {
		t.Errorf("the gzip bomb answered %d, want 413", code)
	}
	var err error
	if n := allocated(func() { err = grpcExport(t, r, raw) }); n > 48<<20 {
		t.Errorf("refusing a gRPC bomb of %d bytes allocated %d MB", len(raw), n>>20)
	}
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("the gRPC bomb: %v, want ResourceExhausted", err)
	}
	got := r.Finish(context.Background(), 0, atLeast(1))
	if got.Counts.TooLarge != 2 || got.Counts.Exports != 0 || got.Counts.Spans != 0 {
		t.Errorf("counts %+v: want the two bombs refused as too large", got.Counts)
	}
}

// testLimits are short deadlines and small caps.
func testLimits() *limits {
	l := defaultLimits
	l.maxConns = 2
	l.headerTimeout, l.readTimeout, l.idleTimeout = 300*time.Millisecond, 600*time.Millisecond, 300*time.Millisecond
	return &l
}

// waitClosed waits for the receiver to close c: reads until EOF or an
// error, failing after guard.
func waitClosed(t *testing.T, c net.Conn, guard time.Duration, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(guard))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("%s: still open after %s", what, guard)
	}
}

// TestReceiverDeadlines: a connection that sends half a request head, one
// idle after an export, and one whose body never comes are closed at
// their deadlines, not held while the receiver runs; the first is counted
// as held without a request.
func TestReceiverDeadlines(t *testing.T) {
	lim := testLimits()
	lim.maxConns = 10
	r := newReceiver(t, Options{MaxSpans: 10, limits: lim})
	dribble := dial(t, r)
	_, _ = dribble.Write([]byte("POST /v1/traces HTTP/1.1\r\nHost: x\r\n"))
	idle := dial(t, r)
	body := exportOf([16]byte{1})
	_, _ = io.WriteString(idle, "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+string(body))
	resp, err := http.ReadResponse(bufio.NewReader(idle), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("export: %v %v", resp, err)
	}
	short := dial(t, r)
	_, _ = io.WriteString(short, "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: 1000\r\n\r\nabc")
	guard := 10 * time.Second
	waitClosed(t, dribble, guard, "half a request head")
	waitClosed(t, idle, guard, "an idle connection")
	waitClosed(t, short, guard, "a body that never comes")
	got := r.Finish(context.Background(), 0, atLeast(1))
	if got.Counts.Conns.NoRequest != 1 || got.Counts.TimedOut != 1 || got.Counts.Exports != 1 {
		t.Errorf("counts %+v: want 1 connection without a request, 1 body timed out, 1 export", got.Counts)
	}
}

// TestReceiverConnectionCap: connections that wait without a request give
// way to an exporter's; when every connection holds an export in
// progress, a new one is turned away, and the join's reason says so.
func TestReceiverConnectionCap(t *testing.T) {
	lim := testLimits()
	lim.headerTimeout, lim.readTimeout, lim.idleTimeout = time.Minute, time.Minute, time.Minute
	serving := make(chan struct{}, 10)
	r := newReceiver(t, Options{MaxSpans: 10, limits: lim, serving: serving})
	for range 2 {
		c := dial(t, r)
		_, _ = c.Write([]byte("POST /v1/traces HTTP/1.1\r\n"))
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := client.Post("http://"+r.Addr()+"/v1/traces", "application/x-protobuf", bytes.NewReader(exportOf([16]byte{1})))
	if err != nil {
		t.Fatalf("an export beside two silent connections at a cap of 2: %v", err)
	}
	resp.Body.Close()
	<-serving
	// Two exports in progress, their bodies pending: every connection has
	// a request in hand.
	for range 2 {
		c := dial(t, r)
		_, _ = io.WriteString(c, "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: 1000\r\n\r\nabc")
		<-serving
	}
	if _, err := client.Post("http://"+r.Addr()+"/v1/traces", "application/x-protobuf", bytes.NewReader(exportOf([16]byte{2}))); err == nil {
		t.Error("an export past the cap of 2 busy connections went through")
	}
	got := r.Finish(context.Background(), 0, atLeast(100))
	if got.Counts.Conns.Evicted < 1 || got.Counts.Conns.AtCap < 1 {
		t.Fatalf("conns %+v: want silent ones evicted and a new one turned away", got.Counts.Conns)
	}
	s := Join(NewMatcher(results(1), got.Started), got, "x", nil, false)
	if !strings.Contains(s.Why, "turned away at the receiver's cap of 2") {
		t.Errorf("why %q does not name the cap", s.Why)
	}
}

// emfileListener fails its first two accepts for the open-files limit,
// then says so and waits until closed.
type emfileListener struct {
	net.Listener
	calls  int
	third  chan struct{}
	closed chan struct{}
}

func (l *emfileListener) Accept() (net.Conn, error) {
	if l.calls++; l.calls <= 2 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	if l.calls == 3 {
		close(l.third)
	}
	<-l.closed
	return nil, net.ErrClosed
}

func (l *emfileListener) Close() error {
	select {
	case <-l.closed:
	default:
		close(l.closed)
	}
	return l.Listener.Close()
}

// TestReceiverOpenFilesLimit: accepts that fail for the open-files limit
// are counted, and the join's reason names the limit rather than blaming
// the exports.
func TestReceiverOpenFilesLimit(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &emfileListener{Listener: inner, third: make(chan struct{}), closed: make(chan struct{})}
	r := serve(ln, Options{MaxSpans: 10})
	<-ln.third
	got := r.Finish(context.Background(), 0, atLeast(1))
	if got.Counts.Conns.OpenFiles != 2 || got.Counts.Conns.AcceptErrors != 2 {
		t.Fatalf("conns %+v: want 2 accepts failed for the open-files limit", got.Counts.Conns)
	}
	s := Join(NewMatcher(results(1), got.Started), got, "x", nil, false)
	if !strings.Contains(s.Why, "open-files limit") || strings.Contains(s.Why, "refused every export") {
		t.Errorf("why %q does not name the open-files limit", s.Why)
	}
}

// TestReceiverExportSlots: past maxExports exports at once, one waits for
// a turn and is told to try again after slotWait, over HTTP and over gRPC,
// where the answer comes before the message is read: a message over
// gRPC's own limit, which gRPC refuses once it has read it, is answered
// Unavailable, not ResourceExhausted.
func TestReceiverExportSlots(t *testing.T) {
	lim := defaultLimits
	lim.maxExports, lim.slotWait, lim.maxBodyBytes = 1, 50*time.Millisecond, 1<<10
	r := newReceiver(t, Options{MaxSpans: 10, limits: &lim})
	if !r.takeSlot(context.Background()) {
		t.Fatal("no first slot")
	}
	if code := post(t, r, exportOf([16]byte{1})); code != http.StatusServiceUnavailable {
		t.Errorf("an export with every slot taken answered %d, want 503", code)
	}
	if err := grpcExport(t, r, bytes.Repeat([]byte{0x12, 0}, 1<<10)); status.Code(err) != codes.Unavailable {
		t.Errorf("a gRPC export with every slot taken: %v, want Unavailable", err)
	}
	r.releaseSlot()
	if code := post(t, r, exportOf([16]byte{1})); code != http.StatusOK {
		t.Errorf("an export with a free slot answered %d", code)
	}
	if err := grpcExport(t, r, exportOf([16]byte{2})); err != nil {
		t.Errorf("a gRPC export with a free slot: %v", err)
	}
	if got := r.Finish(context.Background(), 0, atLeast(2)); got.Counts.Busy != 2 || got.Counts.Exports != 2 || got.Counts.TooLarge != 0 {
		t.Errorf("counts %+v: want 2 busy, 2 taken", got.Counts)
	}
}
