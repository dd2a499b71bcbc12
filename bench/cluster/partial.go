package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/metrics"
)

// A partial is one agent's share of a cluster run (or, with
// --save-partial, a whole single-host run), kept exactly so that merging
// the partials of a run computes the same block and JSON as one host that
// had measured every request. It holds every per-request record with every
// token gap in nanoseconds, all times on the cluster's shared clock, and
// the settings the statistics and the outputs need.
//
// A partial is written and read as a stream, one chunk of records at a
// time, so that neither an agent nor agent 0 nor `stampede merge` holds
// one whole (partial_stream.go has the format, version 4). The records
// are the record log's own (metrics.AppendRecord), so agent 0 appends
// each one it has checked to its spool as it arrives. Versions 2 and 3,
// a gzip stream of one JSON header and then every record in a form of
// their own, are still read, a record at a time (partial_legacy.go).
const (
	partialMagic = "stampede-partial\n"
	// PartialVersion is the format's version, the one written;
	// oldestPartialVersion the oldest a reader reads, any other is refused.
	PartialVersion       = 4
	oldestPartialVersion = 2
)

// Partial is one agent's share of a run, as it is written: its header,
// and its records read from where they are (the agent's record log) each
// time the partial is written.
type Partial struct {
	Header PartialHeader
	// Records yields this agent's requests, each carrying its index in
	// the whole run; nil yields none.
	Records PartialRecords
	// Probes are the side probes' results (--probe-request-rate), on the
	// shared clock; only agent 0 sends probes.
	Probes []metrics.RequestResult
}

// PartialRecords yields a partial's records in turn, the *PartialRecord
// reused from one to the next, until yield returns false; it returns the
// error that ended them early (a damaged log), nil once all are yielded
// or yield stopped.
type PartialRecords func(yield func(*PartialRecord) bool) error

// PartialRecord is one request's outcome with what the merge needs beside
// it. A successful request whose usage gave no output token count carries
// the tokenizer's count of its text, taken where the agent's tokenizer ran
// (RequestResult.TextCounted, TextTokens).
type PartialRecord struct {
	metrics.RequestResult
	// AudioSec is the request's input audio duration (multipart backends).
	AudioSec float64
	// RequestID is the request's x-request-id as this agent sent it (each
	// agent draws its own prefix), for the errors' examples and the
	// server's spans; ExpectedOutputLen the dataset's output length, which
	// the usage check sets the server's counts against.
	RequestID         string
	ExpectedOutputLen int
}

// PartialHeader is a partial's JSON header.
type PartialHeader struct {
	ClusterSize  int `json:"cluster_size"`
	ClusterIndex int `json:"cluster_index"`
	// NumRequests is the number of requests in the whole run.
	NumRequests int `json:"num_requests"`
	// Settings must be equal in every partial of a run.
	Settings PartialSettings `json:"settings"`
	// DurationNs is the span from the run's start (the announced start on
	// the shared clock) to when this agent's last request ended.
	DurationNs int64 `json:"duration_ns"`
	// RPSChangeEvents are the ramp-up's steps (the merge takes agent 0's).
	RPSChangeEvents []pyout.RPSChange `json:"rps_change_events,omitempty"`
	Cancelled       bool              `json:"cancelled"`
	// Clock is how this agent's clock was mapped onto the shared one.
	Clock report.SidecarAgentClock `json:"clock"`
	// Health is this agent's own health figures.
	Health         report.SidecarHealth   `json:"health"`
	ServerMessages []metrics.MessageCount `json:"server_messages,omitempty"`
	// ServerMessagesRest counts the messages whose text was not kept.
	ServerMessagesRest int `json:"server_messages_rest,omitempty"`
	// Fingerprint is this agent's: the server's side from agent 0 alone
	// (it asks the server once), the client's from every agent.
	Fingerprint *report.Fingerprint `json:"fingerprint,omitempty"`
	// URL is where the requests went (the API URL), for the errors'
	// account.
	URL string `json:"url,omitempty"`
	// RTTs are the kernel round-trip times of this agent's connections.
	RTTs []engine.ConnRTT `json:"rtts,omitempty"`
	// Memory is this agent's own memory as its share ended (agentMemory);
	// nil in a version-2 partial.
	Memory *report.SidecarAgentMemory `json:"memory,omitempty"`
	// Server is what agent 0 (or a single host) read from the server
	// beside the run; nil from the other agents and in a version-2
	// partial.
	Server *ServerReadings `json:"server,omitempty"`
	// RequestIDPrefix is the --request-id-prefix this agent sent its
	// requests with: a record whose id is the prefix and its index
	// carries no id of its own (version 4).
	RequestIDPrefix string `json:"request_id_prefix,omitempty"`
}

// ServerReadings are what agent 0 read from the server beside the
// requests, as its blocks and sidecar hold them, for the merge to print
// and save the same: the --server-metrics scrape, the prefix cache's
// counters over the run, --otlp-receiver's join of the server's spans,
// and the speculative-decoding and diffusion figures of its /metrics
// (which Python's block and result print).
type ServerReadings struct {
	Metrics     *report.ServerMetrics    `json:"server_metrics,omitempty"`
	PrefixCache *report.PrefixCache      `json:"prefix_cache,omitempty"`
	Spans       *report.ServerSpans      `json:"server_spans,omitempty"`
	SpecDecode  *metrics.SpecDecodeStats `json:"spec_decode,omitempty"`
	// Diffusion travels as diffusionText: a ratio over zero is an
	// infinity or NaN, which JSON cannot hold.
	Diffusion *metrics.DiffusionStats `json:"-"`
}

// Empty reports whether r holds no reading.
func (r *ServerReadings) Empty() bool {
	return r == nil || *r == ServerReadings{}
}

// diffusionText is metrics.DiffusionStats with its real figures as
// strconv's shortest text, which reads back to the same bits, +Inf and
// NaN included.
type diffusionText struct {
	DenoisingSteps      string `json:"denoising_steps"`
	CanvasPositions     int64  `json:"canvas_positions"`
	CommittedTokens     int64  `json:"committed_tokens"`
	CommittedThroughput string `json:"committed_throughput"`
	StepsPerCanvas      string `json:"steps_per_canvas"`
	CommittedPerStep    string `json:"committed_per_step"`
}

type plainReadings ServerReadings

type readingsJSON struct {
	plainReadings
	Diffusion *diffusionText `json:"diffusion,omitempty"`
}

func (r ServerReadings) MarshalJSON() ([]byte, error) {
	out := readingsJSON{plainReadings: plainReadings(r)}
	if d := r.Diffusion; d != nil {
		text := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
		out.Diffusion = &diffusionText{DenoisingSteps: text(d.DenoisingSteps), CanvasPositions: d.CanvasPositions,
			CommittedTokens: d.CommittedTokens, CommittedThroughput: text(d.CommittedThroughput),
			StepsPerCanvas: text(d.StepsPerCanvas), CommittedPerStep: text(d.CommittedPerStep)}
	}
	return json.Marshal(out)
}

func (r *ServerReadings) UnmarshalJSON(b []byte) error {
	var in readingsJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*r = ServerReadings(in.plainReadings)
	if t := in.Diffusion; t != nil {
		d := &metrics.DiffusionStats{CanvasPositions: t.CanvasPositions, CommittedTokens: t.CommittedTokens}
		for _, f := range []struct {
			name string
			text string
			v    *float64
		}{{"denoising_steps", t.DenoisingSteps, &d.DenoisingSteps}, {"committed_throughput", t.CommittedThroughput, &d.CommittedThroughput},
			{"steps_per_canvas", t.StepsPerCanvas, &d.StepsPerCanvas}, {"committed_per_step", t.CommittedPerStep, &d.CommittedPerStep}} {
			v, err := strconv.ParseFloat(f.text, 64)
			if err != nil {
				return fmt.Errorf("partial: server.diffusion.%s %q: %w", f.name, f.text, err)
			}
			*f.v = v
		}
		r.Diffusion = d
	}
	return nil
}

// PartialSettings are what the statistics and the outputs need besides the
// records: the report's parameters and the compute options.
type PartialSettings struct {
	// Params are the report's parameters, less the rates (JSON has no
	// infinity) and the ramp-up's events, which travel beside them.
	Params             *pyout.ReportParams `json:"params"`
	RequestRate        string              `json:"request_rate"`
	Burstiness         string              `json:"burstiness"`
	Pooling            bool                `json:"pooling"`
	Percentiles        []float64           `json:"percentiles"`
	Goodput            map[string]float64  `json:"goodput,omitempty"`
	ClientQueue        bool                `json:"client_queue"`
	QueueInclusiveE2EL bool                `json:"queue_inclusive_e2el"`
	AudioSeconds       bool                `json:"audio_seconds"`
	// Breakdown prints the --breakdown block after Python's.
	Breakdown bool `json:"breakdown"`
	// PerTokenITL prints the --per-token-itl block after it.
	PerTokenITL bool `json:"per_token_itl,omitempty"`
	// FrontEnds are --server-urls' front ends (request i goes to the one
	// at i mod their count), so that every agent sends each request where
	// agent 0's per-front-end account places it; nil without the option.
	FrontEnds []string `json:"front_ends,omitempty"`
	// Outputs are agent 0's settings of what it computes from the merged
	// records alone, for `stampede merge` to print and save the same.
	Outputs *MergedOutputs `json:"outputs,omitempty"`
}

// NewPartialSettings captures the settings of a run computed with opts.
func NewPartialSettings(p *pyout.ReportParams, opts *metrics.ComputeOptions, breakdown bool) PartialSettings {
	params := *p
	params.RequestRate, params.Burstiness, params.RPSChangeEvents = 0, 0, nil
	// What /metrics gave over the run travels in PartialHeader.Server.
	params.SpecDecode, params.Diffusion = nil, nil
	return PartialSettings{
		Params:      &params,
		RequestRate: strconv.FormatFloat(p.RequestRate, 'g', -1, 64),
		Burstiness:  strconv.FormatFloat(p.Burstiness, 'g', -1, 64),
		Pooling:     opts.Pooling, Percentiles: opts.Percentiles, Goodput: opts.Goodput,
		ClientQueue: opts.ClientQueue, QueueInclusiveE2EL: opts.QueueInclusiveE2EL,
		AudioSeconds: opts.InputAudioSeconds != nil,
		Breakdown:    breakdown,
	}
}

// outputOnly is s without the settings that choose only what agent 0
// prints or saves, and where (--save-result, --append-result,
// --plot-timeline, --result-dir, --result-filename, --label, --metadata,
// the workers row, Outputs): the merge takes agent 0's, and the agents need not
// agree on them. --save-detailed is not one: it decides what each
// agent's records keep.
func (s PartialSettings) outputOnly() PartialSettings {
	if s.Params == nil {
		return s
	}
	p := *s.Params
	p.SaveResult, p.AppendResult, p.PlotTimeline = false, false, false
	// Agent 0 alone sends the probes; its rate is the run's.
	p.ProbeRequestRate = 0
	p.ResultDir, p.ResultFilename, p.Label, p.Metadata, p.Workers = "", "", nil, nil, 0
	s.Params = &p
	s.Outputs = nil
	return s
}

// statisticsKey is what two partials of one run must share: the settings
// less the output-only ones.
func (s PartialSettings) statisticsKey() ([]byte, error) {
	return json.Marshal(s.outputOnly())
}

// reportParams returns the parameters with their rates restored.
func (s *PartialSettings) reportParams() (*pyout.ReportParams, error) {
	if s.Params == nil {
		return nil, errors.New("partial: settings without params")
	}
	p := *s.Params
	var err error
	if p.RequestRate, err = strconv.ParseFloat(s.RequestRate, 64); err != nil {
		return nil, fmt.Errorf("partial: request_rate %q: %w", s.RequestRate, err)
	}
	if p.Burstiness, err = strconv.ParseFloat(s.Burstiness, 64); err != nil {
		return nil, fmt.Errorf("partial: burstiness %q: %w", s.Burstiness, err)
	}
	return &p, nil
}

// agentMemory is what an agent says of its own share of results (index:
// its place in the cluster) besides its resident set: its requests and
// the most of them open at once, counted on the run's own clock (before
// agentPartial moves the times). readRSS adds the rest once the partial's
// records are built.
func agentMemory(index int, results *metrics.Log) *report.SidecarAgentMemory {
	m := &report.SidecarAgentMemory{Index: index, Requests: results.Len()}
	if open, ok := metrics.MaxOpen(results); ok {
		m.MaxOpenStreams = &open
	}
	return m
}

// readRSS reads the process's peak and present resident set into m from
// /proc/self/status, as late as a partial can carry them: the run over,
// its records built, before they are encoded and sent (and, for agent 0,
// before its merge). It returns nil where they cannot be read (not
// Linux).
func readRSS(m *report.SidecarAgentMemory) *report.SidecarAgentMemory {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil
	}
	m.PeakRSSBytes, m.EndRSSBytes = statusBytes(b, "VmHWM:"), statusBytes(b, "VmRSS:")
	return m
}

// statusBytes reads /proc/self/status's field key ("VmHWM:", in kB) as
// bytes; 0 when it is absent.
func statusBytes(status []byte, key string) int64 {
	for line := range bytes.Lines(status) {
		if rest, ok := bytes.CutPrefix(line, []byte(key)); ok {
			f := bytes.Fields(rest)
			if len(f) == 2 && string(f[1]) == "kB" {
				if kb, err := strconv.ParseInt(string(f[0]), 10, 64); err == nil {
					return kb << 10
				}
			}
			return 0
		}
	}
	return 0
}

// RequestFacts gives what a record carries of request index's dataset
// entry: the x-request-id it was sent with and its expected output length.
type RequestFacts func(index int) (id string, expectedOutputLen int)

// logRecords yields the records of results, read from the log in one pass
// each time: the token count of each text the statistics would count
// (the log's own count, else countTokens'), each request's audio duration
// (audio nil: none) and its facts (nil: none known). shift, when set,
// moves each record's times.
func logRecords(results *metrics.Log, countTokens func(string) int, audio func(int) float64, facts RequestFacts, shift func(*metrics.RequestResult)) PartialRecords {
	return func(yield func(*PartialRecord) bool) error {
		var rec PartialRecord
		for _, r := range results.All() {
			rec.RequestResult = *r
			if r.Success && r.OutputTokens == 0 && !r.TextCounted && countTokens != nil {
				rec.TextCounted, rec.TextTokens = true, countTokens(r.GeneratedText)
			}
			if facts != nil {
				rec.RequestID, rec.ExpectedOutputLen = facts(r.Index)
			}
			if audio != nil {
				rec.AudioSec = audio(r.Index)
			}
			if shift != nil {
				shift(&rec.RequestResult)
			}
			if !yield(&rec) {
				return nil
			}
		}
		return results.Err()
	}
}
