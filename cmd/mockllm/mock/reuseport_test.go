package mock

import (
	"net"
	"strconv"
	"testing"
)

// TestReusePortSharesThePort: two servers with ReusePort listen on one
// port; without it the second is refused.
func TestReusePortSharesThePort(t *testing.T) {
	a, err := Start(Config{ReusePort: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	_, portText, _ := net.SplitHostPort(a.Addr())
	port, _ := strconv.Atoi(portText)
	b, err := Start(Config{ReusePort: true, Port: port})
	if err != nil {
		t.Fatalf("a second server with ReusePort on port %d: %v", port, err)
	}
	defer b.Close()
	if b.Addr() != a.Addr() {
		t.Errorf("second server on %s, first on %s", b.Addr(), a.Addr())
	}
	if c, err := Start(Config{Port: port}); err == nil {
		c.Close()
		t.Errorf("a server without ReusePort also listens on port %d", port)
	}
}
