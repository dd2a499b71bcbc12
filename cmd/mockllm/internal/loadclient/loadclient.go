// Package loadclient is a minimal streaming load generator for measuring
// the mock server itself: many keep-alive connections, one streaming
// request each (sent again when a stream ends), counting SSE events. It
// measures nothing about latency; the mock's own truth log does that.
package loadclient

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Config describes the load.
type Config struct {
	// Addr is the server's host:port.
	Addr string
	// Conns is the number of concurrent streams.
	Conns int
	// Path and Body make up each POST request.
	Path string
	Body []byte
	// Spread sends the first requests evenly over this long, so that
	// per-stream schedules do not all line up.
	Spread time.Duration
	// DialWorkers bounds concurrent dials; default 64.
	DialWorkers int
}

// Client is a running load.
type Client struct {
	cfg     Config
	request []byte
	events  atomic.Uint64
	streams atomic.Uint64
	errs    atomic.Uint64
	open    atomic.Int64
	wg      sync.WaitGroup
}

// Start dials every connection and starts streaming; it returns once all
// connections are open. The load runs until ctx is done.
func Start(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.DialWorkers == 0 {
		cfg.DialWorkers = 64
	}
	c := &Client{cfg: cfg}
	c.request = fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		cfg.Path, cfg.Addr, len(cfg.Body), cfg.Body)

	conns := make([]net.Conn, cfg.Conns)
	sem := make(chan struct{}, cfg.DialWorkers)
	var dialErr atomic.Value
	var dials sync.WaitGroup
	for i := range conns {
		sem <- struct{}{}
		dials.Add(1)
		go func() {
			defer func() { <-sem; dials.Done() }()
			conn, err := net.Dial("tcp", cfg.Addr)
			if err != nil {
				dialErr.Store(err)
				return
			}
			conns[i] = conn
		}()
	}
	dials.Wait()
	if err, _ := dialErr.Load().(error); err != nil {
		for _, conn := range conns {
			if conn != nil {
				conn.Close()
			}
		}
		return nil, fmt.Errorf("dial %s: %w", cfg.Addr, err)
	}
	start := time.Now()
	for i, conn := range conns {
		offset := time.Duration(0)
		if cfg.Conns > 0 {
			offset = cfg.Spread * time.Duration(i) / time.Duration(cfg.Conns)
		}
		c.wg.Add(1)
		c.open.Add(1)
		go c.stream(ctx, conn, start.Add(offset))
	}
	return c, nil
}

// stream runs one connection: request, read to the end of the stream,
// request again, until ctx is done or the connection fails.
func (c *Client) stream(ctx context.Context, conn net.Conn, at time.Time) {
	defer c.wg.Done()
	defer c.open.Add(-1)
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	time.Sleep(time.Until(at))
	buf := make([]byte, 16<<10)
	var tail [5]byte // the last bytes read, to see "\n\n" and the last chunk across reads
	for ctx.Err() == nil {
		if _, err := conn.Write(c.request); err != nil {
			c.fail(ctx)
			return
		}
		c.streams.Add(1)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				c.fail(ctx)
				return
			}
			b := buf[:n]
			events := bytes.Count(b, []byte("\n\n"))
			if tail[4] == '\n' && b[0] == '\n' {
				events++
			}
			c.events.Add(uint64(events))
			if n >= len(tail) {
				copy(tail[:], b[n-len(tail):])
			} else {
				copy(tail[:], append(tail[n:], b...))
			}
			if string(tail[:]) == "0\r\n\r\n" {
				break
			}
		}
	}
}

func (c *Client) fail(ctx context.Context) {
	if ctx.Err() == nil {
		c.errs.Add(1)
	}
}

// Wait blocks until every stream has stopped.
func (c *Client) Wait() { c.wg.Wait() }

// Stats is a snapshot of the counters.
type Stats struct {
	// Events counts SSE events received (tokens, usage, [DONE]).
	Events uint64
	// Streams counts requests sent.
	Streams uint64
	// Errors counts connections that failed before the load was stopped.
	Errors uint64
	// Open is the number of connections still streaming.
	Open int64
}

// Stats returns the counters.
func (c *Client) Stats() Stats {
	return Stats{Events: c.events.Load(), Streams: c.streams.Load(), Errors: c.errs.Load(), Open: c.open.Load()}
}
