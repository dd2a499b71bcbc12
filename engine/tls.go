package engine

import (
	"crypto/tls"
	"net"
)

// holdProcs counts a TLS run among the runs holding GOMAXPROCS without
// raising it: its workers are goroutines on the netpoller, with no locked
// thread that needs a P of its own, and a P beyond the CPUs the process
// may use only spins looking for work on a CPU the workers need.
func holdProcs() { raiseProcs(-spareProcs) }

// tlsOnLoops lets TLS runs onto the shard loops (tests turn it off to
// exercise the goroutine path).
var tlsOnLoops = true

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
