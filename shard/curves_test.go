package shard

import (
	"crypto/tls"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/shard/shardtest"
)

func TestCurvesFromEnv(t *testing.T) {
	for _, c := range []struct {
		env  string
		want []tls.CurveID
		bad  string // what the error must name
	}{
		{env: "", want: nil},
		{env: "X25519", want: []tls.CurveID{tls.X25519}},
		{env: " curvep256 , X25519MLKEM768", want: []tls.CurveID{tls.CurveP256, tls.X25519MLKEM768}},
		{env: "X25519,P-256,p384,CurveP521", want: []tls.CurveID{tls.X25519, tls.CurveP256, tls.CurveP384, tls.CurveP521}},
		{env: "X25519,P-255", bad: `"P-255"`},
		{env: "MLKEM768", bad: `"MLKEM768"`},
		{env: "X25519,", bad: `""`},
	} {
		t.Setenv(CurvesEnv, c.env)
		got, err := CurvesFromEnv()
		if c.bad != "" {
			if err == nil || !strings.Contains(err.Error(), c.bad) || !strings.Contains(err.Error(), CurvesEnv) || !strings.Contains(err.Error(), "CurveP256") {
				t.Errorf("%q: error %v, want one naming %s, %s and the accepted names", c.env, err, CurvesEnv, c.bad)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%q: %v, %v; want %v", c.env, got, err, c.want)
		}
	}
}

func TestPrepareTLSCurves(t *testing.T) {
	t.Setenv(CurvesEnv, "")
	if got := PrepareTLS(&tls.Config{}, 1).CurvePreferences; !slices.Equal(got, defaultCurves) {
		t.Errorf("default curves %v, want %v", got, defaultCurves)
	}
	own := []tls.CurveID{tls.CurveP384}
	if got := PrepareTLS(&tls.Config{CurvePreferences: own}, 1).CurvePreferences; !slices.Equal(got, own) {
		t.Errorf("a configuration's own curves became %v", got)
	}
	t.Setenv(CurvesEnv, "X25519MLKEM768")
	if got := PrepareTLS(&tls.Config{}, 1).CurvePreferences; !slices.Equal(got, defaultCurves) {
		t.Errorf("PrepareTLS read %s: %v", CurvesEnv, got)
	}
	named, err := WithCurvesFromEnv(&tls.Config{})
	if got := PrepareTLS(named, 1).CurvePreferences; err != nil || !slices.Equal(got, []tls.CurveID{tls.X25519MLKEM768}) {
		t.Errorf("%s=X25519MLKEM768 gave %v, %v", CurvesEnv, got, err)
	}
	if kept, _ := WithCurvesFromEnv(&tls.Config{CurvePreferences: own}); !slices.Equal(kept.CurvePreferences, own) {
		t.Errorf("the environment replaced a configuration's own curves: %v", kept.CurvePreferences)
	}
	t.Setenv(CurvesEnv, "P-999")
	if _, err := WithCurvesFromEnv(&tls.Config{}); err == nil || !strings.Contains(err.Error(), CurvesEnv) {
		t.Errorf("an unknown curve: %v", err)
	}
}

// A run with the default key exchanges offers P-256 alone to a server
// that takes it, and X25519 then P-256 to one that does not.
func TestProbeRunChoosesP256(t *testing.T) {
	t.Setenv(CurvesEnv, "")
	for _, c := range []struct {
		server []tls.CurveID
		want   []tls.CurveID
	}{
		{server: nil, want: p256Only},
		{server: []tls.CurveID{tls.X25519}, want: defaultCurves},
	} {
		srv, client := shardtest.NewTLSWith(t, func(cfg *tls.Config) { cfg.CurvePreferences = c.server })
		cfg := PrepareTLS(client, 1)
		ok, why := probeRun(t.Context(), srv.Addr.String(), cfg, true, time.Minute)
		if !ok || why != "" {
			t.Fatalf("server curves %v: probe ok %v, %q", c.server, ok, why)
		}
		if !slices.Equal(cfg.CurvePreferences, c.want) {
			t.Errorf("server curves %v: the run offers %v, want %v", c.server, cfg.CurvePreferences, c.want)
		}
	}
	// Curves the user chose stay as they are.
	srv, client := shardtest.NewTLS(t)
	cfg := PrepareTLS(client, 1)
	cfg.CurvePreferences = []tls.CurveID{tls.X25519}
	if ok, _ := probeRun(t.Context(), srv.Addr.String(), cfg, false, time.Minute); !ok || !slices.Equal(cfg.CurvePreferences, []tls.CurveID{tls.X25519}) {
		t.Errorf("chosen curves: ok %v, offered %v", ok, cfg.CurvePreferences)
	}
}
