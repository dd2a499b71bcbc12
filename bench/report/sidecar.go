package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/metrics"
)

// SidecarVersion is the version of the sidecar's schema. Fields are only
// ever added within a version; a change of meaning or a removal raises it.
const SidecarVersion = 1

// Sidecar is stampede's own account of a run, saved beside the result JSON
// as <result name without .json>.stampede.json whenever a result is saved
// (docs/report.md, "The sidecar file"). Python's result JSON stays Python's.
type Sidecar struct {
	Version   int               `json:"version"`
	Health    SidecarHealth     `json:"health"`
	Breakdown *SidecarBreakdown `json:"breakdown"`
	// SteadyState is the window where in-flight requests held at 95 % of
	// the target, and the metrics over it (metrics.ComputeSteadyState);
	// null when the run had none.
	SteadyState *metrics.SteadyState `json:"steady_state"`
	// ServerMetrics is what --server-metrics scraped; absent without it.
	ServerMetrics *ServerMetrics `json:"server_metrics,omitempty"`
	// Reasoning is the reasoning and tool-call account (reasoning.go);
	// null when no request streamed reasoning or tool calls.
	Reasoning *SidecarReasoning `json:"reasoning"`
	// PerToken is --per-token-itl's account (pertoken.go); absent
	// without the flag.
	PerToken *SidecarPerToken `json:"per_token,omitempty"`
	// Errors groups the failed requests by status, error and the
	// server's message (serversaid.go); null when none failed.
	Errors *SidecarErrors `json:"errors"`
	// Usage sets the server's output token counts beside Python's
	// (serversaid.go); null when the server sent none.
	Usage *SidecarUsage `json:"usage"`
	// PrefixCache is the server's prefix-cache counters over the run
	// (prefix_cache.go); absent when the server exports none.
	PrefixCache *PrefixCache `json:"prefix_cache,omitempty"`
	// Fingerprint is the server's and the client's fingerprint, and
	// Manifest what reruns the run (fingerprint.go); absent where the run
	// gathered none. A cluster's is agent 0's; an agent whose client
	// differs has its own in the cluster's account.
	Fingerprint *Fingerprint `json:"fingerprint,omitempty"`
	Manifest    *Manifest    `json:"manifest,omitempty"`
	// ServerSpans is --otlp-receiver's join of the server's trace spans
	// (serverspans.go); absent without it.
	ServerSpans *ServerSpans `json:"server_spans,omitempty"`
	// FirstTokens is TTFO and TTST (firsttokens.go); null when no request
	// succeeded.
	FirstTokens *SidecarFirstTokens `json:"first_tokens"`
	// NetworkRTT is the connections' kernel round-trip times
	// (networkrtt.go); null when none reported one.
	NetworkRTT *SidecarNetworkRTT `json:"network_rtt"`
	// FrontEnds breaks the run down per --server-urls front end, in their
	// order (frontends.go); absent without several.
	FrontEnds []SidecarFrontEnd `json:"front_ends,omitempty"`
	// Cluster is how many agents ran the run and each one's clock and
	// health (sidecar_cluster.go); absent on a single host.
	Cluster *SidecarCluster `json:"cluster,omitempty"`
}

// SidecarHealth is the health line's figures: how well the client kept up,
// and how far its stamps can be trusted.
type SidecarHealth struct {
	Shards            int     `json:"shards"`
	ClientCPUSeconds  float64 `json:"client_cpu_s"`
	LongestLoopTurnMs float64 `json:"longest_loop_turn_ms"`
	ScheduleLagP50Ms  float64 `json:"schedule_lag_p50_ms"`
	ScheduleLagP99Ms  float64 `json:"schedule_lag_p99_ms"`
	ScheduleLagMaxMs  float64 `json:"schedule_lag_max_ms"`
	DeadlineLateMaxMs float64 `json:"deadline_late_max_ms"`
	// KernelRxStampCoverage is the share of reads that carried a kernel
	// receive stamp; KernelTxStampCoverage the share of sent requests
	// whose last byte the kernel stamped.
	KernelRxStampCoverage float64 `json:"kernel_rx_stamp_coverage"`
	KernelTxStampCoverage float64 `json:"kernel_tx_stamp_coverage"`
	RequestsSent          int64   `json:"requests_sent"`
	TokenEvents           int64   `json:"token_events"`
	// SharedStampEvents counts token events that shared the kernel stamp
	// of the event before them in their stream (one read): the ITL of 0
	// between them measured nothing. SharedStampShare is their share of
	// TokenEvents.
	SharedStampEvents int64   `json:"shared_stamp_events"`
	SharedStampShare  float64 `json:"shared_stamp_share"`
	// Connect trouble: handshakes over 1 s (and of them, those with a
	// retransmission), connections reset or closed by the server before
	// any response byte, and connections opened to replace one the
	// server closed.
	SlowConnects          int64 `json:"slow_connects"`
	SlowConnectsRetrans   int64 `json:"slow_connects_retransmitted"`
	DroppedBeforeResponse int64 `json:"dropped_before_response"`
	Reconnects            int64 `json:"reconnects"`
	// Resent counts requests sent again on a fresh connection because the
	// server closed the kept-alive one before reading them;
	// StoppedReuseShards, the shards that stopped reusing connections
	// because the server closed them more often than it answered on them;
	// FreshBeforeReuse, the requests that opened a fresh connection while
	// a server's Keep-Alive header held reuse back, before it was proven.
	Resent             int64 `json:"resent_after_server_close"`
	StoppedReuseShards int   `json:"stopped_reuse_shards"`
	FreshBeforeReuse   int64 `json:"fresh_before_reuse"`
	// WarmConnections is what --warm-connections did; null without it.
	WarmConnections *SidecarWarm `json:"warm_connections"`
	// Memory is a single host's resident set sampled while its streams
	// were open; absent where it could not be read, and in a merged run,
	// whose agents' own are in Agents.
	Memory *SidecarMemory `json:"memory,omitempty"`
	// RecordLog is the run's record log once sorted: its size on disk and
	// in memory; absent in partials' merges of old formats.
	RecordLog *SidecarRecordLog `json:"record_log,omitempty"`
	// Agents is a merged run's per-agent memory, each agent's own, in
	// index order (the agents whose partials carried it); absent on a
	// single host and in an agent's own health.
	Agents []SidecarAgentMemory `json:"agents,omitempty"`
}

// SidecarMemory is the process's resident set (VmRSS, from
// /proc/self/statm) sampled every IntervalMs while the run's streams were
// open, from the schedule's start until the last stream closed, each
// sample with the streams open at that instant (engine.MemorySamples).
type SidecarMemory struct {
	Samples    int     `json:"samples"`
	IntervalMs float64 `json:"interval_ms"`
	// MostOpenStreams is the most streams open at a sample, and
	// RSSAtMostOpenBytes the largest resident set among the samples with
	// that many open: what the open streams held, on top of the process's
	// base.
	MostOpenStreams    int   `json:"most_open_streams"`
	RSSAtMostOpenBytes int64 `json:"rss_at_most_open_bytes"`
	// PeakRSSBytes is the largest resident set of any sample, and
	// OpenAtPeak the streams open at the first sample of that size.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	OpenAtPeak   int   `json:"open_at_peak"`
	// Where the peak went (engine.MemorySamples): the base before any
	// stream opened, the record log's and the prompt window's bytes at
	// the peak, and the remainder: the streams, with the collector's
	// slack.
	BaseRSSBytes    int64 `json:"base_rss_bytes"`
	RecordLogAtPeak int64 `json:"record_log_bytes_at_peak"`
	WindowAtPeak    int64 `json:"prompt_window_bytes_at_peak"`
	StreamsAtPeak   int64 `json:"streams_bytes_at_peak"`
}

// SidecarRecordLog is the size of a run's sorted record log.
type SidecarRecordLog struct {
	Records         int   `json:"records"`
	DiskBytes       int64 `json:"disk_bytes"`
	MemoryBytes     int64 `json:"memory_bytes"`
	PeakBufferBytes int64 `json:"peak_chunk_bytes"`
	// SavedAs is the file the log was saved to (--save-detailed), "" when
	// it went with the run.
	SavedAs string `json:"saved_as,omitempty"`
}

// NewSidecarMemory is the sidecar's form of a run's samples; nil when
// none was taken.
func NewSidecarMemory(m engine.MemorySamples) *SidecarMemory {
	if m.Samples == 0 {
		return nil
	}
	return &SidecarMemory{Samples: m.Samples, IntervalMs: durMs(m.Interval), MostOpenStreams: m.MostOpen,
		RSSAtMostOpenBytes: m.RSSAtMostOpen, PeakRSSBytes: m.PeakRSS, OpenAtPeak: m.OpenAtPeak,
		BaseRSSBytes: m.BaseRSS, RecordLogAtPeak: m.LogAtPeak, WindowAtPeak: m.WindowAtPeak, StreamsAtPeak: m.StreamsAtPeak()}
}

// SidecarAgentMemory is one agent's own memory, which it reads from
// /proc/self/status once its share has run and its partial's records are
// built, before they are encoded and handed over: agent 0's figures
// therefore leave out its merge of everyone's.
type SidecarAgentMemory struct {
	Index int `json:"index"`
	// Requests are the requests of its share.
	Requests int `json:"requests"`
	// PeakRSSBytes is the process's peak resident set (VmHWM) until then,
	// EndRSSBytes its resident set (VmRSS) then.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	EndRSSBytes  int64 `json:"end_rss_bytes"`
	// MaxOpenStreams is the most of its requests open at once (from each
	// request's start to its end), the streams the peak can have held:
	// the moment of the peak is not known, and it often comes after the
	// streams closed, with the results. Null when no request ran.
	MaxOpenStreams *int `json:"max_open_streams"`
	// Sampled is its resident set sampled while its streams were open,
	// with the streams open at each sample; null where it could not be
	// read.
	Sampled *SidecarMemory `json:"sampled"`
}

// SidecarWarm is the warm-up's account: connections opened and left idle
// for the run, connects that failed, rounds that came back slow (and
// halved the next), and the longest handshake.
type SidecarWarm struct {
	Opened             int     `json:"opened"`
	Failed             int     `json:"failed"`
	SlowRounds         int     `json:"slow_rounds"`
	LongestHandshakeMs float64 `json:"longest_handshake_ms"`
}

// SidecarBreakdown is where TTFT went: the statistics of each phase over
// the successful requests with a breakdown, and with --save-detailed each
// such request's phases, exactly, in nanoseconds.
type SidecarBreakdown struct {
	Requests       int           `json:"requests"`
	NewConnections int           `json:"new_connections"`
	Phases         SidecarPhases `json:"phases"`
	// PerRequest is kept with --save-detailed, in request order.
	PerRequest []SidecarRequestBreakdown `json:"per_request,omitempty"`
}

// SidecarPhases holds one summary per phase. connect + tls_handshake +
// send_delay + server_ttfb + first_token = ttft for every request (not for their
// means' percentiles); queue_wait precedes the start.
type SidecarPhases struct {
	QueueWait  SidecarStats `json:"queue_wait"`
	Connect    SidecarStats `json:"connect"`
	TLS        SidecarStats `json:"tls_handshake"`
	SendDelay  SidecarStats `json:"send_delay"`
	ServerTTFB SidecarStats `json:"server_ttfb"`
	FirstToken SidecarStats `json:"first_token"`
	TTFT       SidecarStats `json:"ttft"`
}

// SidecarStats is one phase's summary in milliseconds; Percentiles follow
// --metric-percentiles.
type SidecarStats struct {
	MeanMs      float64             `json:"mean_ms"`
	MedianMs    float64             `json:"median_ms"`
	StdMs       float64             `json:"std_ms"`
	Percentiles []SidecarPercentile `json:"percentiles"`
}

// SidecarPercentile is one percentile P (0..100) of a phase.
type SidecarPercentile struct {
	P       float64 `json:"p"`
	ValueMs float64 `json:"value_ms"`
}

// SidecarRequestBreakdown is one request's phases in nanoseconds.
type SidecarRequestBreakdown struct {
	Index         int   `json:"index"`
	NewConnection bool  `json:"new_connection"`
	QueueWaitNs   int64 `json:"queue_wait_ns"`
	ConnectNs     int64 `json:"connect_ns"`
	TLSNs         int64 `json:"tls_handshake_ns"`
	SendDelayNs   int64 `json:"send_delay_ns"`
	ServerTTFBNs  int64 `json:"server_ttfb_ns"`
	FirstTokenNs  int64 `json:"first_token_ns"`
	TTFTNs        int64 `json:"ttft_ns"`
}

// NewSidecar gathers a run's extras. b is nil when no request has a
// breakdown; detailed keeps every request's phases.
func NewSidecar(res *engine.Result, b *metrics.BreakdownStats, detailed bool) *Sidecar {
	return &Sidecar{Version: SidecarVersion, Health: NewSidecarHealth(res), Breakdown: NewSidecarBreakdown(res.Data.Log, b, detailed)}
}

func durMs(d time.Duration) float64 { return float64(d) / 1e6 }

func share(part, whole int64) float64 {
	if whole == 0 {
		return 0
	}
	return float64(part) / float64(whole)
}

// NewSidecarHealth is the health line's figures of a run.
func NewSidecarHealth(res *engine.Result) SidecarHealth {
	h := res.Health
	var cpu time.Duration
	for _, s := range h.Shards {
		cpu += s.CPUTime
	}
	return SidecarHealth{
		Shards: res.Shards, ClientCPUSeconds: cpu.Seconds(), LongestLoopTurnMs: durMs(h.LongestTurn),
		ScheduleLagP50Ms: durMs(h.ScheduleLagP50), ScheduleLagP99Ms: durMs(h.ScheduleLagP99), ScheduleLagMaxMs: durMs(h.ScheduleLagMax),
		DeadlineLateMaxMs:     durMs(h.DeadlineLateMax),
		KernelRxStampCoverage: h.KernelStampCoverage,
		KernelTxStampCoverage: share(h.TxStamped, h.Sent),
		RequestsSent:          h.Sent,
		TokenEvents:           h.TokenEvents,
		SharedStampEvents:     h.SharedStamps,
		SharedStampShare:      share(h.SharedStamps, h.TokenEvents),
		SlowConnects:          h.SlowConnects,
		SlowConnectsRetrans:   h.SynRetransmits,
		DroppedBeforeResponse: h.DroppedBeforeResponse,
		Reconnects:            h.Reconnects,
		Resent:                h.Resent,
		StoppedReuseShards:    h.StoppedReuse,
		FreshBeforeReuse:      h.FreshBeforeReuse,
		WarmConnections:       sidecarWarm(h.Warm),
		Memory:                NewSidecarMemory(h.Memory),
		RecordLog:             newSidecarRecordLog(h.Log),
	}
}

func newSidecarRecordLog(l engine.LogHealth) *SidecarRecordLog {
	if l == (engine.LogHealth{}) {
		return nil
	}
	return &SidecarRecordLog{Records: l.Records, DiskBytes: l.DiskBytes, MemoryBytes: l.MemoryBytes, PeakBufferBytes: l.PeakBufferBytes}
}

func sidecarWarm(w engine.WarmStats) *SidecarWarm {
	if w == (engine.WarmStats{}) {
		return nil
	}
	return &SidecarWarm{Opened: w.Opened, Failed: w.Failed, SlowRounds: w.Slowed, LongestHandshakeMs: durMs(w.Longest)}
}

func sidecarStats(s metrics.Stats) SidecarStats {
	out := SidecarStats{MeanMs: s.MeanMs, MedianMs: s.MedianMs, StdMs: s.StdMs, Percentiles: []SidecarPercentile{}}
	for _, p := range s.Percentiles {
		out.Percentiles = append(out.Percentiles, SidecarPercentile{P: p.P, ValueMs: p.ValueMs})
	}
	return out
}

// NewSidecarBreakdown is the breakdown of the successful requests: nil
// when b is; detailed keeps every request's phases.
func NewSidecarBreakdown(results *metrics.Log, b *metrics.BreakdownStats, detailed bool) *SidecarBreakdown {
	if b == nil {
		return nil
	}
	out := &SidecarBreakdown{
		Requests: b.Requests, NewConnections: b.NewConnections,
		Phases: SidecarPhases{
			QueueWait: sidecarStats(b.QueueWait), Connect: sidecarStats(b.Connect), TLS: sidecarStats(b.TLS), SendDelay: sidecarStats(b.Send),
			ServerTTFB: sidecarStats(b.Server), FirstToken: sidecarStats(b.FirstToken), TTFT: sidecarStats(b.TTFT),
		},
	}
	if !detailed {
		return out
	}
	out.PerRequest = make([]SidecarRequestBreakdown, 0, b.Requests)
	for _, r := range results.All() {
		if !r.Success || !r.Breakdown.Known {
			continue
		}
		out.PerRequest = append(out.PerRequest, SidecarRequestBreakdown{
			Index: r.Index, NewConnection: r.Breakdown.NewConn, QueueWaitNs: r.QueueNs,
			ConnectNs: r.Breakdown.ConnectNs, TLSNs: r.Breakdown.TLSNs, SendDelayNs: r.Breakdown.SendNs, ServerTTFBNs: r.Breakdown.ServerNs,
			FirstTokenNs: r.Breakdown.FirstTokenNs, TTFTNs: r.TTFTNs,
		})
	}
	return out
}

// RecordLogPath is the saved record log's name for the result file
// resultPath (--save-detailed).
func RecordLogPath(resultPath string) string {
	return strings.TrimSuffix(resultPath, ".json") + ".records"
}

// SidecarPath is the sidecar's name for the result file resultPath.
func SidecarPath(resultPath string) string {
	return strings.TrimSuffix(resultPath, ".json") + ".stampede.json"
}

// SaveSidecar writes sc to path as one line of JSON: truncating the file,
// or with --append-result appending a line, as the result file gets one.
func SaveSidecar(path string, sc *Sidecar, appendResult bool) error {
	body, err := json.Marshal(sc)
	if err != nil {
		return err
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if appendResult {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	f, err := os.OpenFile(path, flags, 0o666)
	if err != nil {
		return fmt.Errorf("sidecar file: %w", err)
	}
	_, err = f.Write(append(body, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sidecar file %s: %w", path, err)
	}
	return nil
}

// BreakdownTitle heads the --breakdown block.
const BreakdownTitle = " TTFT Breakdown (stampede) "

// WriteBreakdown prints the --breakdown block after Python's block: how
// many requests it covers, then each phase's mean, median and selected
// percentiles in Python's row format. Without any breakdown (a transport
// that records none) it says so in one line.
func WriteBreakdown(w io.Writer, b *metrics.BreakdownStats) error {
	c := pyout.NewConsole(w)
	c.Header(BreakdownTitle, '=')
	if b == nil {
		c.Line("No request recorded a breakdown.")
		c.Rule()
		return c.Flush()
	}
	c.Row("Requests with a breakdown:", b.Requests)
	c.Row("Of them on a new connection:", b.NewConnections)
	secs := []pyout.Section{
		{Name: "Queue Wait", Header: "Queue wait (before start)", Stats: &b.QueueWait},
		{Name: "Connect", Header: "Connect (start to established)", Stats: &b.Connect},
	}
	if b.TLSConnections > 0 {
		secs = append(secs, pyout.Section{Name: "TLS Handshake", Header: "TLS handshake", Stats: &b.TLS})
	}
	for _, sec := range append(secs, []pyout.Section{
		{Name: "Send Delay", Header: "Send delay (to request sent)", Stats: &b.Send},
		{Name: "Server TTFB", Header: "Server time to first byte", Stats: &b.Server},
		{Name: "First Token", Header: "First byte to first token", Stats: &b.FirstToken},
		{Name: "TTFT", Header: "Time to First Token", Stats: &b.TTFT},
	}...) {
		c.Section(sec)
	}
	c.Rule()
	return c.Flush()
}
