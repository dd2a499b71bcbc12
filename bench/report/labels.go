package report

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
)

// The report names the sidecar's figures in words. A key missing from the
// tables below (one a newer stampede wrote) is still shown, under its own
// name, with its value as JSON spells it.

// figureFormat says how a figure's value is printed.
type figureFormat int

const (
	formatCount   figureFormat = iota // a whole number
	formatMs                          // milliseconds, three decimals
	formatSeconds                     // seconds, two decimals
	formatShare                       // a share of 1, as a percentage
)

// figureLabel is how one sidecar key reads on the page.
type figureLabel struct {
	Label  string
	Unit   string
	Format figureFormat
}

// healthLabels are the sidecar health's keys, in the order the page lists
// them: the client's capacity first, then its timing, its stamps and its
// connections.
var healthLabels = []struct {
	Key string
	figureLabel
}{
	{"shards", figureLabel{"Shards (event loops)", "", formatCount}},
	{"client_cpu_s", figureLabel{"Client CPU time", "s", formatSeconds}},
	{"longest_loop_turn_ms", figureLabel{"Longest event-loop turn", "ms", formatMs}},
	{"schedule_lag_p50_ms", figureLabel{"Schedule lag, median", "ms", formatMs}},
	{"schedule_lag_p99_ms", figureLabel{"Schedule lag, P99", "ms", formatMs}},
	{"schedule_lag_max_ms", figureLabel{"Schedule lag, max", "ms", formatMs}},
	{"deadline_late_max_ms", figureLabel{"Timed-out request closed past its deadline, at most", "ms", formatMs}},
	{"kernel_rx_stamp_coverage", figureLabel{"Reads with a kernel RX timestamp", "%", formatShare}},
	{"kernel_tx_stamp_coverage", figureLabel{"Requests with a kernel TX timestamp", "%", formatShare}},
	{"requests_sent", figureLabel{"Requests sent", "", formatCount}},
	{"token_events", figureLabel{"Token events", "", formatCount}},
	{"shared_stamp_events", figureLabel{"Token events sharing a read's stamp", "", formatCount}},
	{"shared_stamp_share", figureLabel{"Share of token events sharing a read's stamp", "%", formatShare}},
	{"slow_connects", figureLabel{"Connections slower than 1 s to open", "", formatCount}},
	{"slow_connects_retransmitted", figureLabel{"Slow connections with a retransmitted handshake", "", formatCount}},
	{"dropped_before_response", figureLabel{"Connections closed before any response byte", "", formatCount}},
	{"reconnects", figureLabel{"Reconnects after the server closed a connection", "", formatCount}},
	{"warm_connections", figureLabel{"Warm connections (--warm-connections)", "", formatCount}},
}

// breakdownLabels name the TTFT breakdown's phases, in the order they
// happen; ttft is their sum.
// Short labels the bar's stretches.
var breakdownLabels = []struct{ Key, Label, Short string }{
	{"queue_wait", "Queue wait (before the request's turn)", "queue"},
	{"connect", "TCP connect", "connect"},
	{"tls_handshake", "TLS handshake", "TLS"},
	{"send_delay", "Sending the request", "send"},
	{"server_ttfb", "Server, to the first response byte", "server"},
	{"first_token", "First byte to first token", "first token"},
	{"ttft", "TTFT (the phases from connect on)", "TTFT"},
}

// breakdownLabel is a phase's words and short words; an unknown phase
// keeps its key for both.
func breakdownLabel(key string) (label, short string) {
	for _, l := range breakdownLabels {
		if l.Key == key {
			return l.Label, l.Short
		}
	}
	return key, key
}

// figureText prints one value in its format; a value that is not a
// number (null, an object) is written as JSON, an object's fields by
// name.
func figureText(v any, f figureFormat) string {
	x, ok := v.(float64)
	if !ok {
		if m, isObj := v.(map[string]any); isObj {
			return objectText(m)
		}
		if v == nil {
			return "—"
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	switch f {
	case formatCount:
		if x == float64(int64(x)) {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'g', 6, 64)
	case formatMs:
		return strconv.FormatFloat(x, 'f', 3, 64)
	case formatSeconds:
		return strconv.FormatFloat(x, 'f', 2, 64)
	case formatShare:
		return strconv.FormatFloat(x*100, 'f', 2, 64)
	}
	return strconv.FormatFloat(x, 'g', 6, 64)
}

// objectText is a small object as "key value, key value" in key order.
func objectText(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, strings.ReplaceAll(k, "_", " ")+" "+figureText(m[k], formatCount))
	}
	return strings.Join(parts, ", ")
}
