package engine

import (
	"crypto/tls"
	"net"
	"net/netip"
	"time"

	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/shard"
)

// holdProcs counts a TLS run among the runs holding GOMAXPROCS without
// raising it: its workers are goroutines on the netpoller, with no locked
// thread that needs a P of its own, and a P beyond the CPUs the process
// may use only spins looking for work on a CPU the workers need.
func holdProcs() { raiseProcs(-spareProcs) }

// tlsOnLoops switches the shard loops' TLS path on (tests turn it off to
// exercise the goroutine path).
var tlsOnLoops = true

// tlsPath chooses how a run speaks TLS: on the shard loops (base.TLS set,
// ok true) when the server's answer to one probing handshake is TLS 1.3,
// else on a goroutine per connection; why says what made
// the choice for the goroutines.
func tlsPath(cfg *tls.Config, addr netip.AddrPort, address string, conns int, timeout time.Duration, base *shard.Config) (ok bool, why string) {
	if !tlsOnLoops {
		return false, "event-loop path switched off"
	}
	prepared := shard.PrepareTLS(withServerName(cfg, address), conns)
	if ok, why := shard.ProbeTLS(addr.String(), prepared, timeout); !ok {
		return false, why
	}
	base.TLS = prepared
	return true, ""
}

// tlsSet adapts shard.TLSTransport to the engine's transport.
type tlsSet struct{ t *shard.TLSTransport }

// startTLS starts one TLS worker per slot of the whole run (the
// concurrency cap, or every request when there is none). The TLS
// configuration gets the server name from the address unless it has one.
func startTLS(base shard.Config, cfg *tls.Config, address string, workers int, opts metrics.Options, why string) (transport, []*metrics.Recorder, error) {
	cfg = withServerName(cfg, address)
	base.ID, base.CPU = 0, -1
	base.Recorder = metrics.NewRecorder(opts)
	t := shard.StartTLS(base, cfg, workers)
	t.NoteFallback(why)
	return tlsSet{t}, []*metrics.Recorder{base.Recorder}, nil
}

func (s tlsSet) wakeOne()               { s.t.Wake() }
func (s tlsSet) stop()                  { s.t.Stop() }
func (s tlsSet) abort()                 { s.t.Abort() }
func (s tlsSet) wait()                  { s.t.Wait() }
func (s tlsSet) health() []ShardHealth { return []ShardHealth{shardHealth(s.t.Health())} }

// withServerName returns cfg, or a copy naming address's host as the
// server when cfg names none.
func withServerName(cfg *tls.Config, address string) *tls.Config {
	if cfg.ServerName != "" {
		return cfg
	}
	cfg = cfg.Clone()
	if host, _, err := net.SplitHostPort(address); err == nil {
		cfg.ServerName = host
	}
	return cfg
}
