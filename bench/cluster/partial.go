package cluster

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
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
// The format, version 3 (docs/cluster.md "The partial file"), is a gzip stream of:
//
//	magic      "stampede-partial\n"
//	version    uvarint
//	header     uvarint length, then that many bytes of JSON (PartialHeader)
//	count      uvarint, the number of records
//	records    count times:
//	  index                               uvarint
//	  flags                               byte (partialSuccess, …)
//	  request id, error                   uvarint length + bytes
//	  text                                the same, only with partialText
//	  prompt, output, chunks, sequences   uvarint
//	  expected output                     uvarint (the dataset's output length)
//	  status                              uvarint (the answer's HTTP status, 0: none)
//	  server message                      uvarint length + bytes
//	  server tokens                       varint, then its source as one byte
//	  arrival, start, queue, ttft, latency varint (ns)
//	  breakdown                           5 varints (ns), only with partialBreakdown
//	  reasoning                           6 varints (first answer and first tool call ns,
//	                                      reasoning chunks and tokens, tool-call chunks, calls),
//	                                      only with partialReasoning
//	  counted                             uvarint, only with partialCounted
//	  audio                               8 bytes, float64 bits little-endian, only with Settings.AudioSeconds
//	  gaps                                uvarint count, then each gap as a varint (ns)
//	  running usage                       only with partialRunning: the state as one byte
//	                                      (metrics.RunningUsage); when counted, the tokens
//	                                      of each token event as runs: uvarint count, then
//	                                      each run's tokens and length as uvarints, the
//	                                      lengths adding up to one more than the gaps
//	probes     uvarint count, then that many records as above: the side
//	           probes' results (agent 0's alone sends them)
//
// Varints are encoding/binary's (zig-zag for the signed ones). Version 1
// lacked the request id, the expected output, what the server said, the
// reasoning and the probes; it is refused, since a merge without them
// would leave the sidecar's errors, usage and reasoning wrong. The running
// usage (--per-token-itl) came within version 2, before its release: a
// partial without it reads as one without the option. Version 3 added the
// agent's own memory to the header (PartialHeader.Memory) and the
// settings of the merged outputs (PartialSettings.Outputs, MergedOutputs),
// and agent 0's readings of the server (PartialHeader.Server), and
// nothing to the records: a version-2 partial reads as one whose
// agent did not say, so its merge has no steady-state, trimmed or
// reasoning block, whatever its run asked for.
// A version-2 reader refuses a version-3 partial by its version, where it
// would otherwise fail on the header's unknown field.
const (
	partialMagic = "stampede-partial\n"
	// PartialVersion is the format's version, the one written;
	// oldestPartialVersion the oldest a reader reads, any other is refused.
	PartialVersion       = 3
	oldestPartialVersion = 2
	// maxPartialBytes bounds a partial's decompressed size: a partial read
	// from the network must not take all memory. 20,000 streams of 1,000
	// tokens take about 100 MB.
	maxPartialBytes = 4 << 30
)

// Record flags.
const (
	partialSuccess = 1 << iota
	partialBreakdown
	partialNewConn
	partialText
	partialCounted
	partialReasoning
	partialRunning
)

// Partial is one agent's share of a run.
type Partial struct {
	Header PartialHeader
	// Records are this agent's requests, each carrying its index in the
	// whole run; ITLNs holds every gap (nil when none), Gaps is unused.
	Records []PartialRecord
	// Probes are the side probes' results (--probe-request-rate), on the
	// shared clock; only agent 0 sends probes.
	Probes []PartialRecord
}

// PartialRecord is one request's outcome with what the merge needs beside
// it.
type PartialRecord struct {
	metrics.RequestResult
	// Counted is the tokenizer's count of GeneratedText, for a successful
	// request whose usage gave no output token count; -1 when not counted.
	Counted int
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

// newPartialRecords turns results into records: the token count of each
// text the statistics would count (the log's own count, else
// countTokens'), each request's audio duration (audio nil: none) and its
// facts (nil: none known). shift, when set, moves each record's times.
func newPartialRecords(results *metrics.Log, countTokens func(string) int, audio func(int) float64, facts RequestFacts, shift func(*metrics.RequestResult)) []PartialRecord {
	recs := make([]PartialRecord, 0, results.Len())
	for _, r := range results.All() {
		rec := PartialRecord{RequestResult: r.Clone(), Counted: -1}
		if facts != nil {
			rec.RequestID, rec.ExpectedOutputLen = facts(r.Index)
		}
		if len(rec.ITLNs) == 0 {
			rec.ITLNs = nil
		}
		switch {
		case r.TextCounted:
			rec.Counted = r.TextTokens
		case r.Success && r.OutputTokens == 0 && countTokens != nil:
			rec.Counted = countTokens(r.GeneratedText)
		}
		rec.TextCounted, rec.TextTokens = false, 0
		if audio != nil {
			rec.AudioSec = audio(r.Index)
		}
		if shift != nil {
			shift(&rec.RequestResult)
		}
		recs = append(recs, rec)
	}
	return recs
}

// WritePartial writes p in the partial format.
func WritePartial(w io.Writer, p *Partial) error {
	header, err := json.Marshal(&p.Header)
	if err != nil {
		return fmt.Errorf("partial header: %w", err)
	}
	zw := gzip.NewWriter(w)
	buf := []byte(partialMagic)
	buf = binary.AppendUvarint(buf, PartialVersion)
	buf = binary.AppendUvarint(buf, uint64(len(header)))
	buf = append(buf, header...)
	for _, recs := range [][]PartialRecord{p.Records, p.Probes} {
		buf = binary.AppendUvarint(buf, uint64(len(recs)))
		for i := range recs {
			buf = appendRecord(buf, &recs[i], p.Header.Settings.AudioSeconds)
			if len(buf) >= 1<<20 {
				if _, err := zw.Write(buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
		}
	}
	if _, err := zw.Write(buf); err != nil {
		return err
	}
	return zw.Close()
}

func appendRecord(b []byte, r *PartialRecord, audio bool) []byte {
	var flags byte
	if r.Success {
		flags |= partialSuccess
	}
	if r.Breakdown.Known {
		flags |= partialBreakdown
	}
	if r.Breakdown.NewConn {
		flags |= partialNewConn
	}
	if r.GeneratedText != "" {
		flags |= partialText
	}
	if r.Counted >= 0 {
		flags |= partialCounted
	}
	if r.Reasoning != (metrics.Reasoning{}) {
		flags |= partialReasoning
	}
	if r.ChunkTokens.State != metrics.RunningUntracked {
		flags |= partialRunning
	}
	b = binary.AppendUvarint(b, uint64(r.Index))
	b = append(b, flags)
	b = appendString(b, r.RequestID)
	b = appendString(b, r.Error)
	if flags&partialText != 0 {
		b = appendString(b, r.GeneratedText)
	}
	for _, v := range []int{r.PromptLen, r.OutputTokens, r.ChunkEvents, r.NumInputSequences, r.ExpectedOutputLen, r.HTTPStatus} {
		b = binary.AppendUvarint(b, uint64(v))
	}
	b = appendString(b, r.ServerMessage)
	b = binary.AppendVarint(b, r.ServerTokens)
	b = append(b, byte(r.ServerUsage))
	for _, v := range []int64{r.ArrivalNs, r.StartNs, r.QueueNs, r.TTFTNs, r.LatencyNs} {
		b = binary.AppendVarint(b, v)
	}
	if flags&partialBreakdown != 0 {
		bd := &r.Breakdown
		for _, v := range []int64{bd.ConnectNs, bd.TLSNs, bd.SendNs, bd.ServerNs, bd.FirstTokenNs} {
			b = binary.AppendVarint(b, v)
		}
	}
	if flags&partialReasoning != 0 {
		rs := &r.Reasoning
		for _, v := range []int64{rs.FirstAnswerNs, rs.FirstToolCallNs, int64(rs.ReasoningChunks), rs.ReasoningTokens, int64(rs.ToolCallChunks), int64(rs.ToolCalls)} {
			b = binary.AppendVarint(b, v)
		}
	}
	if flags&partialCounted != 0 {
		b = binary.AppendUvarint(b, uint64(r.Counted))
	}
	if audio {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r.AudioSec))
	}
	b = binary.AppendUvarint(b, uint64(len(r.ITLNs)))
	for _, g := range r.ITLNs {
		b = binary.AppendVarint(b, g)
	}
	if flags&partialRunning != 0 {
		b = appendChunkTokens(b, r.ChunkTokens)
	}
	return b
}

// appendChunkTokens appends a request's running usage: its state, and for
// a counted one its tokens per event as runs of equal counts. Most events
// carry the same count (one token, or a speculative decoder's usual
// batch), so a 1,000-event stream mostly takes a few bytes.
func appendChunkTokens(b []byte, ct metrics.ChunkTokens) []byte {
	b = append(b, byte(ct.State))
	if ct.State != metrics.RunningCounted {
		return b
	}
	var runs []uint64 // tokens, length, tokens, length, …
	for k := range ct.All() {
		if n := len(runs); n > 0 && runs[n-2] == uint64(k) {
			runs[n-1]++
			continue
		}
		runs = append(runs, uint64(k), 1)
	}
	b = binary.AppendUvarint(b, uint64(len(runs)/2))
	for _, v := range runs {
		b = binary.AppendUvarint(b, v)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// ReadPartial reads a partial written by WritePartial.
func ReadPartial(r io.Reader) (*Partial, error) {
	data, err := ReadPartialBytes(r)
	if err != nil {
		return nil, err
	}
	return ParsePartial(data)
}

// ReadPartialBytes decompresses a partial, up to maxPartialBytes.
func ReadPartialBytes(r io.Reader) ([]byte, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("partial: not a gzip stream: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(zr, maxPartialBytes+1))
	if err != nil {
		return nil, fmt.Errorf("partial: %w", err)
	}
	if len(data) > maxPartialBytes {
		return nil, fmt.Errorf("partial: larger than %d bytes once decompressed", maxPartialBytes)
	}
	return data, nil
}

// PartialError names what is wrong in a partial's bytes.
type PartialError struct {
	Part string // "magic", "header", "record 12", …
	What string
}

func (e *PartialError) Error() string { return "malformed partial: " + e.Part + ": " + e.What }

// partialReader reads the uncompressed form; the first error sticks.
type partialReader struct {
	b    []byte
	part string
	err  error
}

func (p *partialReader) fail(what string) {
	if p.err == nil {
		p.err = &PartialError{Part: p.part, What: what}
	}
}

func (p *partialReader) uvarint(max uint64) uint64 {
	if p.err != nil {
		return 0
	}
	v, n := binary.Uvarint(p.b)
	if n <= 0 {
		p.fail("truncated or overlong varint")
		return 0
	}
	p.b = p.b[n:]
	if v > max {
		p.fail(fmt.Sprintf("value %d is above %d", v, max))
		return 0
	}
	return v
}

func (p *partialReader) varint() int64 {
	if p.err != nil {
		return 0
	}
	v, n := binary.Varint(p.b)
	if n <= 0 {
		p.fail("truncated or overlong varint")
		return 0
	}
	p.b = p.b[n:]
	return v
}

func (p *partialReader) bytes(n uint64) []byte {
	if p.err != nil {
		return nil
	}
	if n > uint64(len(p.b)) {
		p.fail(fmt.Sprintf("%d bytes announced, %d left", n, len(p.b)))
		return nil
	}
	out := p.b[:n]
	p.b = p.b[n:]
	return out
}

func (p *partialReader) string() string { return string(p.bytes(p.uvarint(uint64(len(p.b))))) }

// ParsePartial parses a partial's uncompressed bytes.
func ParsePartial(data []byte) (*Partial, error) {
	pr := &partialReader{b: data, part: "magic"}
	if !bytes.HasPrefix(data, []byte(partialMagic)) {
		pr.fail("not a stampede partial result")
		return nil, pr.err
	}
	pr.b = pr.b[len(partialMagic):]
	pr.part = "version"
	if v := pr.uvarint(math.MaxUint32); pr.err == nil && (v < oldestPartialVersion || v > PartialVersion) {
		pr.fail(fmt.Sprintf("version %d; this stampede reads versions %d to %d: merge it with the stampede that wrote it, or run the agents again with this one", v, oldestPartialVersion, PartialVersion))
	}
	pr.part = "header"
	header := pr.bytes(pr.uvarint(uint64(len(pr.b))))
	if pr.err != nil {
		return nil, pr.err
	}
	p := &Partial{}
	dec := json.NewDecoder(bytes.NewReader(header))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p.Header); err != nil {
		pr.fail(err.Error())
		return nil, pr.err
	}
	h := &p.Header
	if h.NumRequests < 0 || h.ClusterSize < 1 || h.ClusterIndex < 0 || h.ClusterIndex >= h.ClusterSize {
		pr.fail(fmt.Sprintf("cluster index %d of size %d over %d requests", h.ClusterIndex, h.ClusterSize, h.NumRequests))
		return nil, pr.err
	}
	if p.Records = readRecords(pr, h, "record", uint64(h.NumRequests)); pr.err != nil {
		return nil, pr.err
	}
	if p.Probes = readRecords(pr, h, "probe", math.MaxUint32); pr.err != nil {
		return nil, pr.err
	}
	if len(pr.b) != 0 {
		pr.part = "end"
		pr.fail(fmt.Sprintf("%d bytes after the last record", len(pr.b)))
		return nil, pr.err
	}
	return p, nil
}

// minRecordBytes is the least a record takes (index, flags, five empty
// strings' lengths and the rest), so that a count above len/minRecordBytes
// is a lie found before any allocation.
const minRecordBytes = 19

// readRecords reads a count, at most max, and that many records; what
// names the part in an error ("record 12", "probe 3").
func readRecords(pr *partialReader, h *PartialHeader, what string, max uint64) []PartialRecord {
	pr.part = what + " count"
	count := pr.uvarint(min(max, uint64(len(pr.b)/minRecordBytes)))
	if pr.err != nil || count == 0 {
		return nil
	}
	recs := make([]PartialRecord, 0, count)
	for i := range count {
		pr.part = what + " " + strconv.FormatUint(i, 10)
		rec := readRecord(pr, h)
		if pr.err != nil {
			return nil
		}
		recs = append(recs, rec)
	}
	return recs
}

func readRecord(pr *partialReader, h *PartialHeader) PartialRecord {
	r := PartialRecord{Counted: -1}
	r.Index = int(pr.uvarint(uint64(max(h.NumRequests-1, 0))))
	flagByte := pr.bytes(1)
	if pr.err != nil {
		return r
	}
	flags := flagByte[0]
	if flags >= partialRunning<<1 {
		pr.fail(fmt.Sprintf("unknown flags %#x", flags))
	}
	r.Success = flags&partialSuccess != 0
	r.RequestID = pr.string()
	r.Error = pr.string()
	if flags&partialText != 0 {
		r.GeneratedText = pr.string()
	}
	const maxCount = math.MaxInt32
	r.PromptLen = int(pr.uvarint(maxCount))
	r.OutputTokens = int(pr.uvarint(maxCount))
	r.ChunkEvents = int(pr.uvarint(maxCount))
	r.NumInputSequences = int(pr.uvarint(maxCount))
	r.ExpectedOutputLen = int(pr.uvarint(maxCount))
	r.HTTPStatus = int(pr.uvarint(999))
	r.ServerMessage = pr.string()
	r.ServerTokens = pr.varint()
	if b := pr.bytes(1); b != nil {
		if r.ServerUsage = metrics.UsageSource(b[0]); r.ServerUsage > metrics.UsageInTokenChunk {
			pr.fail(fmt.Sprintf("unknown usage source %d", b[0]))
		}
	}
	r.ArrivalNs, r.StartNs, r.QueueNs, r.TTFTNs, r.LatencyNs = pr.varint(), pr.varint(), pr.varint(), pr.varint(), pr.varint()
	if flags&partialBreakdown != 0 {
		bd := &r.Breakdown
		bd.Known, bd.NewConn = true, flags&partialNewConn != 0
		bd.ConnectNs, bd.TLSNs, bd.SendNs, bd.ServerNs, bd.FirstTokenNs = pr.varint(), pr.varint(), pr.varint(), pr.varint(), pr.varint()
	}
	if flags&partialReasoning != 0 {
		rs := &r.Reasoning
		rs.FirstAnswerNs, rs.FirstToolCallNs = pr.varint(), pr.varint()
		rs.ReasoningChunks, rs.ReasoningTokens = int(pr.varint()), pr.varint()
		rs.ToolCallChunks, rs.ToolCalls = int(pr.varint()), int(pr.varint())
	}
	if flags&partialCounted != 0 {
		r.Counted = int(pr.uvarint(maxCount))
	}
	if h.Settings.AudioSeconds {
		if b := pr.bytes(8); b != nil {
			r.AudioSec = math.Float64frombits(binary.LittleEndian.Uint64(b))
		}
	}
	// Every gap takes at least one byte.
	if n := pr.uvarint(uint64(len(pr.b))); n > 0 {
		r.ITLNs = make([]int64, n)
		for j := range r.ITLNs {
			r.ITLNs[j] = pr.varint()
		}
	}
	if flags&partialRunning != 0 {
		r.ChunkTokens = readChunkTokens(pr, len(r.ITLNs)+1)
	}
	return r
}

// readChunkTokens reads a request's running usage; events is its number
// of token events (its gaps and one), which a counted one's runs must add
// up to, so that a short run can neither announce more counts than its
// gaps have bytes nor leave an event uncounted.
func readChunkTokens(pr *partialReader, events int) metrics.ChunkTokens {
	b := pr.bytes(1)
	if pr.err != nil {
		return metrics.ChunkTokens{}
	}
	state := metrics.RunningUsage(b[0])
	switch state {
	case metrics.RunningCounted:
	case metrics.RunningMissing, metrics.RunningInvalid:
		return metrics.ChunkTokens{State: state}
	default:
		pr.fail(fmt.Sprintf("unknown running usage state %d", b[0]))
		return metrics.ChunkTokens{}
	}
	runs := pr.uvarint(uint64(events))
	counts := make([]uint16, 0, events)
	for range runs {
		tokens := pr.uvarint(math.MaxUint16)
		length := pr.uvarint(uint64(events - len(counts)))
		if pr.err != nil {
			return metrics.ChunkTokens{}
		}
		if length == 0 {
			pr.fail("a run of no token events")
			return metrics.ChunkTokens{}
		}
		for range length {
			counts = append(counts, uint16(tokens))
		}
	}
	if len(counts) != events {
		pr.fail(fmt.Sprintf("tokens of %d token events for %d", len(counts), events))
		return metrics.ChunkTokens{}
	}
	return metrics.CountedChunkTokens(counts)
}
