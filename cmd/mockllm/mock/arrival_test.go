package mock

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

func TestArrivalIndexLookup(t *testing.T) {
	const realOff = 1_000_000
	peer := uint64(0x7f000001)<<16 | 40000
	other := uint64(0x7f000001)<<16 | 40001
	isn1, isn2 := uint32(0xfffffff0), uint32(500) // the first wraps
	segs := []tapSegment{
		{peer: peer, seq: isn1, syn: true, rxNs: realOff + 10},
		{peer: peer, seq: isn1 + 1, n: 300, rxNs: realOff + 100},     // request at 0
		{peer: other, seq: 7, n: 300, rxNs: realOff + 150},           // no SYN seen: ignored
		{peer: peer, seq: isn1 + 301, n: 200, rxNs: realOff + 1000},  // request at 300
		{peer: peer, seq: isn1 + 301, n: 200, rxNs: realOff + 200e6}, // its retransmission
		{peer: peer, seq: isn2, syn: true, rxNs: realOff + 300e6},    // the port again
		{peer: peer, seq: isn2 + 1, n: 300, rxNs: realOff + 300e6 + 100},
	}
	x := newArrivalIndex(segs, realOff)
	for _, c := range []struct {
		key  arrivalKey
		want int64
	}{
		{arrivalKey{peer: peer, offset: 0, loopNs: 200}, 100},
		{arrivalKey{peer: peer, offset: 300, loopNs: 1200}, 1000},
		{arrivalKey{peer: peer, offset: 300, loopNs: 201e6}, 200e6},           // the latest copy before the read
		{arrivalKey{peer: peer, offset: 350, loopNs: 201e6}, 200e6},           // inside a segment
		{arrivalKey{peer: peer, offset: 0, loopNs: 300e6 + 200}, 300e6 + 100}, // the second connection
		{arrivalKey{peer: peer, offset: 0, loopNs: 250e6}, 100},               // the first one's, read late
		{arrivalKey{peer: peer, offset: 500, loopNs: 400e6}, 0},               // no such byte
		{arrivalKey{peer: other, offset: 0, loopNs: 400e6}, 0},                // no SYN
		{arrivalKey{peer: peer, offset: -1, loopNs: 400e6}, 0},                // TLS
		{arrivalKey{peer: 0, offset: 0, loopNs: 400e6}, 0},                    // not IPv4
		{arrivalKey{peer: peer, offset: 0, loopNs: 100 - stampSlack - 1}, 0},  // before any copy
		{arrivalKey{peer: peer, offset: 0, loopNs: 100 - stampSlack}, 100},    // within the slack
	} {
		if got := x.lookup(c.key); got != c.want {
			t.Errorf("lookup(%+v) = %d, want %d", c.key, got, c.want)
		}
	}
	if (*arrivalIndex)(nil).lookup(arrivalKey{peer: peer}) != 0 {
		t.Error("a nil index found a stamp")
	}
}

// TestTruthArrivals checks the A and H records against the order of
// events: a request arrives (kernel stamp) before the loop reads it, its
// headers go out after that, and on a keep-alive connection the next
// request arrives after the last token of the one before.
func TestTruthArrivals(t *testing.T) {
	t.Parallel()
	truth := filepath.Join(t.TempDir(), "truth.log")
	srv, base := startServer(t, Config{TruthLog: truth})
	if srv.tap.Load() == nil {
		if _, err := openArrivalTap(1); err != nil {
			t.Skipf("no arrival tap here: %v", err)
		}
		t.Fatal("the server opened no arrival tap, though one can be opened")
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	for i := range 3 {
		body := `{"prompt":"hi","max_tokens":3,"stream":true}`
		req, _ := http.NewRequest("POST", base+"/v1/completions", strings.NewReader(body))
		req.Header.Set("x-request-id", fmt.Sprint("r", i))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	reqs := closeAndRead(t, srv, truth)
	if len(reqs) != 3 {
		t.Fatalf("%d requests in the truth log, want 3", len(reqs))
	}
	for i, r := range reqs {
		if r.ArrivalRxNs == 0 || r.HeadersNs == 0 || len(r.Tokens) != 3 {
			t.Fatalf("request %s: arrival stamp %d, headers %d, %d tokens", r.RequestID, r.ArrivalRxNs, r.HeadersNs, len(r.Tokens))
		}
		if r.ArrivalRxNs > r.ArrivalNs+stampSlack {
			t.Errorf("request %s: arrival stamp %d after the loop read it at %d", r.RequestID, r.ArrivalRxNs, r.ArrivalNs)
		}
		if r.HeadersNs < r.ArrivalNs || r.Tokens[0].SentNs < r.HeadersNs {
			t.Errorf("request %s: headers at %d, not between arrival %d and token 0 at %d", r.RequestID, r.HeadersNs, r.ArrivalNs, r.Tokens[0].SentNs)
		}
		if i > 0 && r.ArrivalRxNs <= reqs[i-1].Tokens[2].SentNs {
			t.Errorf("request %s arrived at %d, before the last token of the one before (%d)", r.RequestID, r.ArrivalRxNs, reqs[i-1].Tokens[2].SentNs)
		}
	}
}
