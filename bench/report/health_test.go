package report

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/engine"
)

// Durations print with three significant digits at most and a unit.
func TestDurationText(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0 ns"},
		{420 * time.Nanosecond, "420 ns"},
		{960 * time.Nanosecond, "1.0 µs"},
		{10663 * time.Nanosecond, "11 µs"},
		{362927 * time.Nanosecond, "363 µs"},
		{999700 * time.Nanosecond, "1.0 ms"},
		{4383780 * time.Nanosecond, "4.4 ms"},
		{999960 * time.Microsecond, "1.00 s"},
		{1250 * time.Millisecond, "1.25 s"},
	} {
		if got := durationText(c.d); got != c.want {
			t.Errorf("durationText(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

// No duration in the health line is printed in Go's form (4.38378ms),
// and it has a unit after a space.
func TestHealthLineDurations(t *testing.T) {
	res := &engine.Result{Shards: 1, Health: engine.Health{
		Shards:         []engine.ShardHealth{{CPUTime: 40 * time.Millisecond, TLSHandshakes: 3, TLSHandshakeCPU: 700 * time.Microsecond, TLSHandshakeTime: 4383780}},
		ScheduleLagP50: 10663, ScheduleLagP99: 11561, ScheduleLagMax: 4383780, LongestTurn: 362927,
		DeadlineLateMax: 2 * time.Millisecond,
	}}
	var b strings.Builder
	WriteHealth(&b, res, nil)
	line := b.String()
	if m := regexp.MustCompile(`\d(ns|µs|ms|s)\b`).FindString(line); m != "" {
		t.Errorf("a duration without a space before its unit (%q): %s", m, line)
	}
	for _, want := range []string{"client CPU 0.04 s", "longest loop turn 363 µs", "schedule lag p50 11 µs p99 12 µs max 4.4 ms",
		"233 µs CPU and 1.5 ms each", "closed at most 2.0 ms after"} {
		if !strings.Contains(line, want) {
			t.Errorf("health line lacks %q: %s", want, line)
		}
	}
	if strings.Contains(line, "fell behind") {
		t.Errorf("a client 12 µs late at p99 is said to have fallen behind: %s", line)
	}
}

// Past ScheduleLagBehind at p99 the line says the client fell behind, by
// how much.
func TestHealthLineBehindSchedule(t *testing.T) {
	res := &engine.Result{Shards: 1, Health: engine.Health{ScheduleLagP50: time.Millisecond,
		ScheduleLagP99: 23400 * time.Microsecond, ScheduleLagMax: 61 * time.Millisecond}}
	var b strings.Builder
	WriteHealth(&b, res, nil)
	if want := "the client fell behind its schedule: 1% of requests went out 23.4 ms or more late (at worst 61.0 ms)"; !strings.Contains(b.String(), want) {
		t.Errorf("health line lacks %q: %s", want, b.String())
	}
	res.Health.ScheduleLagP99 = ScheduleLagBehind - time.Microsecond
	b.Reset()
	WriteHealth(&b, res, nil)
	if strings.Contains(b.String(), "fell behind") {
		t.Errorf("p99 under the threshold: %s", b.String())
	}
}

// With --otlp-receiver the health line carries the receiver's busy time
// per span and the memory its spans held; without it, no such clause.
func TestHealthLineSpanReceiver(t *testing.T) {
	res := &engine.Result{Shards: 1}
	line := func(s *ServerSpans) string {
		var b strings.Builder
		WriteHealth(&b, res, s)
		if n := strings.Count(b.String(), "\n"); n != 1 {
			t.Errorf("%d lines, want one: %q", n, b.String())
		}
		return b.String()
	}
	got := line(&ServerSpans{Receiver: ServerSpansReceiver{Spans: 10000, BusyS: 0.013, BusyPerSpanUs: 1.3, HeldBytes: 1_900_000}})
	if want := ", span receiver 1.3 µs/span, 1.9 MB"; !strings.Contains(got, want) {
		t.Errorf("health line lacks %q: %s", want, got)
	}
	got = line(&ServerSpans{Receiver: ServerSpansReceiver{BusyS: 0.0004}})
	if want := ", span receiver got no spans (busy 400 µs), 0 B"; !strings.Contains(got, want) {
		t.Errorf("health line of a receiver without spans lacks %q: %s", want, got)
	}
	if got, want := line(&ServerSpans{}), ", span receiver got no spans, 0 B"; !strings.Contains(got, want) {
		t.Errorf("health line of an idle receiver lacks %q: %s", want, got)
	}
	if strings.Contains(got, "beyond loopback") {
		t.Errorf("health line of a protected receiver: %s", got)
	}
	got = line(&ServerSpans{Receiver: ServerSpansReceiver{Address: "0.0.0.0:4317", Unprotected: true, Spans: 1, BusyPerSpanUs: 1}})
	if want := "listening beyond loopback (0.0.0.0:4317) without --otlp-receiver-token"; !strings.Contains(got, want) {
		t.Errorf("health line of a receiver open to any host lacks %q: %s", want, got)
	}
	if got := line(nil); strings.Contains(got, "receiver") {
		t.Errorf("health line without --otlp-receiver: %s", got)
	}
	for n, want := range map[int64]string{999: "999 B", 31_400: "31 kB", 999_600: "1.0 MB", 1_940_000: "1.9 MB", 9_960_000: "10 MB", 123_456_789: "123 MB"} {
		if got := bytesText(n); got != want {
			t.Errorf("bytesText(%d) = %q, want %q", n, got, want)
		}
	}
}

// Requests that waited for their bytes from the request store, and a
// store that failed, are said on the health line; nothing when neither.
func TestHealthLineRequestStore(t *testing.T) {
	line := func(h engine.Health) string {
		var b strings.Builder
		WriteHealth(&b, &engine.Result{Shards: 1, Health: h}, nil)
		return b.String()
	}
	if got := line(engine.Health{}); strings.Contains(got, "request store") {
		t.Errorf("a run whose store kept up mentions it: %s", got)
	}
	got := line(engine.Health{Window: engine.WindowStats{Late: 3, LateMax: 2 * time.Millisecond}, StoreErr: errors.New("request store: reading request 7 back: EIO")})
	for _, want := range []string{"3 requests were due before their bytes were read back from the request store (the longest waited 2.0 ms)",
		"the run stopped sending: request store: reading request 7 back: EIO"} {
		if !strings.Contains(got, want) {
			t.Errorf("health line lacks %q: %s", want, got)
		}
	}
}
