package mock

import (
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/httpwire"
)

// TestOTLPEnvHeaders: the exporter's headers come from
// $OTEL_EXPORTER_OTLP_TRACES_HEADERS, else $OTEL_EXPORTER_OTLP_HEADERS, as
// OpenTelemetry's exporters read them: name=value pairs, the values
// percent-decoded, the names lowercased; a pair without '=' is an error
// naming the variable.
func TestOTLPEnvHeaders(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	got, err := otlpEnvHeaders(env(map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20s3cret, x-tenant = a%2Cb"}))
	want := []httpwire.Header{{Key: "authorization", Value: "Bearer s3cret"}, {Key: "x-tenant", Value: "a,b"}}
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("headers %v, %v; want %v", got, err, want)
	}
	got, err = otlpEnvHeaders(env(map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "b=2"}))
	if err != nil || len(got) != 1 || got[0].Key != "b" {
		t.Errorf("the traces variable does not win: %v, %v", got, err)
	}
	if got, err := otlpEnvHeaders(env(nil)); err != nil || got != nil {
		t.Errorf("no variable: %v, %v", got, err)
	}
	if _, err := otlpEnvHeaders(env(map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "novalue"})); err == nil || !strings.Contains(err.Error(), "$OTEL_EXPORTER_OTLP_HEADERS") {
		t.Errorf("a pair without '=': %v", err)
	}
}
