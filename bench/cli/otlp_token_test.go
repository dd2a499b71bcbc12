package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/internal/py"
)

// TestOTLPReceiverToken: --otlp-receiver-token needs --otlp-receiver and a
// bearer token or a header; the plan keeps it as given.
func TestOTLPReceiverToken(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--otlp-receiver-token", "s3cret"}, "argument --otlp-receiver-token: it needs --otlp-receiver"},
		{[]string{"--otlp-receiver", "127.0.0.1:4317", "--otlp-receiver-token", "two words"}, "argument --otlp-receiver-token: invalid value \"two words\""},
		{[]string{"--otlp-receiver", "127.0.0.1:4317", "--otlp-receiver-token", "=x"}, "want a bearer token"},
	} {
		_, err := parseArgs(c.args, noEnv)
		var u *py.UsageError
		if !errors.As(err, &u) || !strings.Contains(u.Msg, c.want) {
			t.Errorf("%q: %v, want a usage error with %q", c.args, err, c.want)
		}
	}
	p := mustParse(t, "--otlp-receiver", "127.0.0.1:4317", "--otlp-receiver-token", "authorization=Bearer s3cret")
	if p.OTLPReceiverToken != "authorization=Bearer s3cret" {
		t.Errorf("plan token %q", p.OTLPReceiverToken)
	}
}
