package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/engine"
)

func TestSidecarPath(t *testing.T) {
	for in, want := range map[string]string{
		"a/b-10.0qps-m-20260101-000000.json": "a/b-10.0qps-m-20260101-000000.stampede.json",
		"result":                             "result.stampede.json",
		"x.json.json":                        "x.json.stampede.json",
	} {
		if got := SidecarPath(in); got != want {
			t.Errorf("SidecarPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestConnectTroubleText(t *testing.T) {
	if got := connectTrouble(engine.Health{}); got != "" {
		t.Errorf("no trouble: %q", got)
	}
	got := connectTrouble(engine.Health{SlowConnects: 812, SynRetransmits: 800, DroppedBeforeResponse: 3, Reconnects: 5, Resent: 2, StoppedReuse: 1})
	for _, want := range []string{"812 connections took > 1 s to open", "800 needed a retransmitted handshake", "accept queue",
		"--ramp-up-strategy", "3 connections were reset or closed", "5 reconnects",
		"2 requests re-sent on a fresh connection after the server closed a kept-alive one before reading them",
		"connections were not reused"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if strings.Contains(connectTrouble(engine.Health{SlowConnects: 2}), "retransmitted") {
		t.Error("names retransmits that were not counted")
	}
	if got := connectTrouble(engine.Health{StoppedReuse: 2, FreshBeforeReuse: 40}); !strings.Contains(got, "opened its own; 40 of them before the first close") {
		t.Errorf("%q does not count the requests the Keep-Alive header sent on fresh connections", got)
	}
	if got := connectTrouble(engine.Health{StoppedReuse: 1}); strings.Contains(got, "before the first close") {
		t.Errorf("names fresh connections that were not counted: %q", got)
	}
	if got := connectTrouble(engine.Health{Reconnects: 1}); strings.Contains(got, "re-sent") || strings.Contains(got, "not reused") {
		t.Errorf("names re-sends or a stop that did not happen: %q", got)
	}
}

// The health line counts, over the shards, the TLS connections that fell
// back from the loops to crypto/tls, and says nothing when none did.
func TestHealthLineTLSFallbacks(t *testing.T) {
	line := func(fell ...int64) string {
		res := &engine.Result{Shards: len(fell)}
		for _, n := range fell {
			res.Health.Shards = append(res.Health.Shards, engine.ShardHealth{TLSHandshakes: 4, TLSFallbacks: n, TLSPath: engine.TLSPathLoop})
		}
		var b strings.Builder
		WriteHealth(&b, res, nil)
		return b.String()
	}
	if got := line(2, 0, 1); !strings.Contains(got, "TLS path: "+engine.TLSPathLoop+" (3 connections not on TLS 1.3 fell back") {
		t.Errorf("health line with 3 fallbacks: %s", got)
	}
	if got := line(0, 0); strings.Contains(got, "fell back") {
		t.Errorf("health line without fallbacks: %s", got)
	}
}

// The fresh connections a Keep-Alive header held reuse back for reach
// the sidecar, and a cluster's merged health sums them.
func TestSidecarHealthFreshBeforeReuse(t *testing.T) {
	h := NewSidecarHealth(&engine.Result{Health: engine.Health{StoppedReuse: 1, FreshBeforeReuse: 7}})
	if h.FreshBeforeReuse != 7 || h.StoppedReuseShards != 1 {
		t.Fatalf("fresh_before_reuse %d, stopped_reuse_shards %d; want 7 and 1", h.FreshBeforeReuse, h.StoppedReuseShards)
	}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"fresh_before_reuse":7`) {
		t.Errorf("sidecar health %s: no fresh_before_reuse of 7", b)
	}
	if m := MergeHealth([]SidecarHealth{h, h}); m.FreshBeforeReuse != 14 {
		t.Errorf("merged fresh_before_reuse %d, want 14", m.FreshBeforeReuse)
	}
}

// TLS handshakes the connect timeout ended are named on the health line
// and counted in the sidecar, a cluster's merged health summing them.
func TestHandshakeTimeoutsReported(t *testing.T) {
	h := engine.Health{TLSHandshakeTimeouts: 3}
	if got := connectTrouble(h); !strings.Contains(got, "3 TLS handshakes timed out") || !strings.Contains(got, "--connect-timeout-sec") {
		t.Errorf("health line's connect trouble: %q", got)
	}
	if got := connectTrouble(engine.Health{}); strings.Contains(got, "timed out") {
		t.Errorf("names timeouts that did not happen: %q", got)
	}
	sh := NewSidecarHealth(&engine.Result{Health: h})
	b, err := json.Marshal(sh)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"tls_handshake_timeouts":3`) {
		t.Errorf("sidecar health %s: no tls_handshake_timeouts of 3", b)
	}
	if m := MergeHealth([]SidecarHealth{sh, sh}); m.TLSHandshakeTimeouts != 6 {
		t.Errorf("merged tls_handshake_timeouts %d, want 6", m.TLSHandshakeTimeouts)
	}
}
