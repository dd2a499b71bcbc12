package cli

import (
	"slices"
	"testing"
)

func TestRecordArgvRedactsSecrets(t *testing.T) {
	args := []string{"--base-url", "http://user:pw@h:8000", "--header", "Authorization=Bearer k", "X-Run=1",
		"--cluster-token", "s1", "--cluster-token=s2", "--server-metrics-header=Cookie=c", "--otlp-receiver-token", "authorization=Bearer s3", "--model", "m"}
	want := []string{"--base-url", "http://user:<redacted>@h:8000", "--header", "Authorization=<redacted>", "X-Run=1",
		"--cluster-token", redacted, "--cluster-token=" + redacted, "--server-metrics-header=Cookie=" + redacted, "--otlp-receiver-token", redacted, "--model", "m"}
	if got := recordArgv(args); !slices.Equal(got, want) {
		t.Errorf("recordArgv =\n%q, want\n%q", got, want)
	}
	if args[1] != "http://user:pw@h:8000" {
		t.Errorf("recordArgv changed its input")
	}
}

func TestParseRecordsArgv(t *testing.T) {
	p := mustParse(t, "--model", "m", "--seed", "3")
	if !slices.Equal(p.Argv, []string{"--model", "m", "--seed", "3"}) {
		t.Errorf("Argv = %q", p.Argv)
	}
}
