package engine

import (
	"github.com/stampede-bench/stampede/shard"
)

// The client's health as the engine publishes it, under its own names, so
// that what reads a run's health (the outputs, the cluster merge) needs
// nothing below the engine.

// TLS paths a run can take, as ShardHealth.TLSPath names them.
const (
	// TLSPathLoop: crypto/tls handshakes on goroutines, then the shard
	// loops open and seal the TLS 1.3 records themselves.
	TLSPathLoop = shard.TLSPathLoop
	// TLSPathUserspace: a goroutine per connection, which opens the
	// server's TLS 1.3 records itself.
	TLSPathUserspace = shard.TLSPathUserspace
	// TLSPathCryptoTLS: TLS 1.2 or another suite, read through crypto/tls.
	TLSPathCryptoTLS = shard.TLSPathCryptoTLS
)

// ShardHealth is one shard's account of itself (or the TLS fallback
// transport's, as one entry), read after the run; WarmStats is what its
// warm-up did and ConnRTT one connection's kernel round-trip times. They
// are the transport's own types, published here under the engine's names:
// one definition, so a field the shard adds reaches the outputs and the
// cluster merge as it is, and nothing above the engine imports shard.
type (
	ShardHealth = shard.Health
	WarmStats   = shard.WarmStats
	ConnRTT     = shard.ConnRTT
)
