package shard

import (
	"os"
	"strings"
)

// availableULPPath lists the upper-layer protocols the kernel can attach
// to a TCP socket; "tls" is there once the tls module is loaded.
const availableULPPath = "/proc/sys/net/ipv4/tcp_available_ulp"

// TLS paths a run can take, as Health.TLSPath names them.
const (
	// TLSPathUserspace: crypto/tls handshakes, the worker decrypts the
	// server's TLS 1.3 AES-GCM records itself (goroutine per connection;
	// the fallback when a server's first handshake was not TLS 1.3
	// AES-GCM, or the loops are switched off).
	TLSPathUserspace = "userspace records"
	// TLSPathCryptoTLS: TLS 1.2 or ChaCha20, read through crypto/tls.
	TLSPathCryptoTLS = "crypto/tls reads"
	// TLSPathLoop: crypto/tls handshakes on goroutines, then the shard
	// loops open and seal the TLS 1.3 AES-GCM records themselves.
	TLSPathLoop = "records on the event loops"
)

// ktlsNote says whether the kernel offers kTLS, for a TLS path.
func ktlsNote() string {
	ok, why := KTLSAvailable()
	if ok {
		return "kTLS available but unused"
	}
	return "no kTLS (" + why + ")"
}

// KTLSAvailable reports whether the kernel offers the "tls" upper-layer
// protocol (kTLS), and if not, why. stampede does not hand keys to the
// kernel yet: the answer goes to the health line, so a run says which
// path it could have used.
func KTLSAvailable() (bool, string) {
	b, err := os.ReadFile(availableULPPath)
	if err != nil {
		return false, "cannot read " + availableULPPath
	}
	return ulpListed(string(b), "tls"), availableULPPath + ": " + strings.TrimSpace(string(b))
}

func ulpListed(list, name string) bool {
	for _, f := range strings.Fields(list) {
		if f == name {
			return true
		}
	}
	return false
}
