package cluster

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/stampede-bench/stampede/metrics"
)

// Versions 2 and 3 of the partial format, still read (a record at a time,
// from the gzip stream) and no longer written. After the header:
//
//	count      uvarint, the number of records
//	records    count times:
//	  index                               uvarint
//	  flags                               byte (legacySuccess, …)
//	  request id, error                   uvarint length + bytes
//	  text                                the same, only with legacyText
//	  prompt, output, chunks, sequences   uvarint
//	  expected output                     uvarint (the dataset's output length)
//	  status                              uvarint (the answer's HTTP status, 0: none)
//	  server message                      uvarint length + bytes
//	  server tokens                       varint, then its source as one byte
//	  arrival, start, queue, ttft, latency varint (ns)
//	  breakdown                           5 varints (ns), only with legacyBreakdown
//	  reasoning                           6 varints (first answer and first tool call ns,
//	                                      reasoning chunks and tokens, tool-call chunks, calls),
//	                                      only with legacyReasoning
//	  counted                             uvarint, only with legacyCounted
//	  audio                               8 bytes, float64 bits little-endian, only with Settings.AudioSeconds
//	  gaps                                uvarint count, then each gap as a varint (ns)
//	  running usage                       only with legacyRunning: the state as one byte
//	                                      (metrics.RunningUsage); when counted, the tokens
//	                                      of each token event as runs: uvarint count, then
//	                                      each run's tokens and length as uvarints, the
//	                                      lengths adding up to one more than the gaps
//	probes     uvarint count, then that many records as above
//
// Version 1 lacked the request id, the expected output, what the server
// said, the reasoning and the probes; it is refused. Version 3 added the
// agent's memory, the merged outputs' settings and agent 0's readings of
// the server to the header, and nothing to the records: a version-2
// partial reads as one whose agent did not say, so its merge has no
// steady-state, trimmed or reasoning block, whatever its run asked for.
const (
	legacySuccess = 1 << iota
	legacyBreakdown
	legacyNewConn
	legacyText
	legacyCounted
	legacyReasoning
	legacyRunning
)

// maxLegacyString bounds a text of a legacy record (an error, a server's
// message, a generated text); maxLegacyGaps a record's gaps.
const (
	maxLegacyString = maxPartialSection
	maxLegacyGaps   = 1 << 26
)

// legacyRecords reads the records of a version-2 or -3 partial from its
// stream; the first error sticks.
type legacyRecords struct {
	r     streamReader
	h     *PartialHeader
	part  string
	err   error
	count uint64 // records announced
	read  uint64
	buf   []byte
}

func newLegacyRecords(r streamReader, h *PartialHeader) *legacyRecords {
	l := &legacyRecords{r: r, h: h, part: "record count"}
	l.count = l.uvarint(uint64(h.NumRequests))
	return l
}

func (l *legacyRecords) fail(what string) {
	if l.err == nil {
		l.err = &PartialError{Part: l.part, What: what}
	}
}

// failRead fails for a read error: a stream that ends is cut short.
func (l *legacyRecords) failRead(err error) {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		l.fail("cut short")
		return
	}
	if l.err == nil {
		l.err = fmt.Errorf("partial: %w", err)
	}
}

func (l *legacyRecords) uvarint(max uint64) uint64 {
	if l.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(l.r)
	if err != nil {
		l.failRead(err)
		return 0
	}
	if v > max {
		l.fail(fmt.Sprintf("value %d is above %d", v, max))
		return 0
	}
	return v
}

func (l *legacyRecords) varint() int64 {
	if l.err != nil {
		return 0
	}
	v, err := binary.ReadVarint(l.r)
	if err != nil {
		l.failRead(err)
		return 0
	}
	return v
}

func (l *legacyRecords) byte() byte {
	if l.err != nil {
		return 0
	}
	b, err := l.r.ReadByte()
	if err != nil {
		l.failRead(err)
	}
	return b
}

func (l *legacyRecords) string() string {
	n := l.uvarint(maxLegacyString)
	if l.err != nil {
		return ""
	}
	var err error
	if l.buf, err = readGrowing(l.r, l.buf[:0], int(n)); err != nil {
		l.failRead(err)
		return ""
	}
	return string(l.buf)
}

// next reads the next record into r; io.EOF after the last.
func (l *legacyRecords) next(r *PartialRecord) error {
	if l.err != nil {
		return l.err
	}
	if l.read == l.count {
		return io.EOF
	}
	l.part = "record " + strconv.FormatUint(l.read, 10)
	l.record(r)
	if l.err != nil {
		return l.err
	}
	if r.Index >= l.h.NumRequests {
		l.fail(fmt.Sprintf("value %d is above %d", r.Index, max(l.h.NumRequests-1, 0)))
		return l.err
	}
	l.read++
	return nil
}

// probes reads the probes after the last record.
func (l *legacyRecords) probes() ([]metrics.RequestResult, error) {
	l.part = "probe count"
	n := l.uvarint(maxPartialProbes)
	var out []metrics.RequestResult
	var r PartialRecord
	for i := range n {
		l.part = "probe " + strconv.FormatUint(i, 10)
		l.record(&r)
		if l.err != nil {
			return nil, l.err
		}
		out = append(out, r.RequestResult.Clone())
	}
	return out, l.err
}

// record reads one record into r, reusing its gaps' array.
func (l *legacyRecords) record(r *PartialRecord) {
	itls := r.ITLNs[:0]
	*r = PartialRecord{}
	r.Index = int(l.uvarint(math.MaxInt32))
	flags := l.byte()
	if l.err == nil && flags >= legacyRunning<<1 {
		l.fail(fmt.Sprintf("unknown flags %#x", flags))
	}
	r.Success = flags&legacySuccess != 0
	r.RequestID = l.string()
	r.Error = l.string()
	if flags&legacyText != 0 {
		r.GeneratedText = l.string()
	}
	const maxCount = math.MaxInt32
	r.PromptLen = int(l.uvarint(maxCount))
	r.OutputTokens = int(l.uvarint(maxCount))
	r.ChunkEvents = int(l.uvarint(maxCount))
	r.NumInputSequences = int(l.uvarint(maxCount))
	r.ExpectedOutputLen = int(l.uvarint(maxCount))
	r.HTTPStatus = int(l.uvarint(999))
	r.ServerMessage = l.string()
	r.ServerTokens = l.varint()
	if b := l.byte(); l.err == nil {
		if r.ServerUsage = metrics.UsageSource(b); r.ServerUsage > metrics.UsageInTokenChunk {
			l.fail(fmt.Sprintf("unknown usage source %d", b))
		}
	}
	r.ArrivalNs, r.StartNs, r.QueueNs, r.TTFTNs, r.LatencyNs = l.varint(), l.varint(), l.varint(), l.varint(), l.varint()
	if flags&legacyBreakdown != 0 {
		bd := &r.Breakdown
		bd.Known, bd.NewConn = true, flags&legacyNewConn != 0
		bd.ConnectNs, bd.TLSNs, bd.SendNs, bd.ServerNs, bd.FirstTokenNs = l.varint(), l.varint(), l.varint(), l.varint(), l.varint()
	}
	if flags&legacyReasoning != 0 {
		rs := &r.Reasoning
		rs.FirstAnswerNs, rs.FirstToolCallNs = l.varint(), l.varint()
		rs.ReasoningChunks, rs.ReasoningTokens = int(l.varint()), l.varint()
		rs.ToolCallChunks, rs.ToolCalls = int(l.varint()), int(l.varint())
	}
	if flags&legacyCounted != 0 {
		// Counted where the agent's tokenizer ran: the output length of
		// a success whose usage gave none.
		r.TextCounted, r.TextTokens = true, int(l.uvarint(maxCount))
	}
	if l.h.Settings.AudioSeconds {
		var b [8]byte
		if l.err == nil {
			if _, err := io.ReadFull(l.r, b[:]); err != nil {
				l.failRead(err)
			}
		}
		r.AudioSec = math.Float64frombits(binary.LittleEndian.Uint64(b[:]))
	}
	// The gaps grow as their bytes come, whatever the count announces.
	n := l.uvarint(maxLegacyGaps)
	for range n {
		if l.err != nil {
			break
		}
		itls = append(itls, l.varint())
	}
	if n > 0 {
		r.ITLNs = itls
	}
	if flags&legacyRunning != 0 {
		r.ChunkTokens = l.chunkTokens(len(r.ITLNs) + 1)
	}
}

// chunkTokens reads a request's running usage; events is its number of
// token events (its gaps and one), which a counted one's runs must add up
// to, so that a short run can neither announce more counts than its gaps
// nor leave an event uncounted.
func (l *legacyRecords) chunkTokens(events int) metrics.ChunkTokens {
	b := l.byte()
	if l.err != nil {
		return metrics.ChunkTokens{}
	}
	state := metrics.RunningUsage(b)
	switch state {
	case metrics.RunningCounted:
	case metrics.RunningMissing, metrics.RunningInvalid:
		return metrics.ChunkTokens{State: state}
	default:
		l.fail(fmt.Sprintf("unknown running usage state %d", b))
		return metrics.ChunkTokens{}
	}
	runs := l.uvarint(uint64(events))
	counts := make([]uint16, 0, events)
	for range runs {
		tokens := l.uvarint(math.MaxUint16)
		length := l.uvarint(uint64(events - len(counts)))
		if l.err != nil {
			return metrics.ChunkTokens{}
		}
		if length == 0 {
			l.fail("a run of no token events")
			return metrics.ChunkTokens{}
		}
		for range length {
			counts = append(counts, uint16(tokens))
		}
	}
	if len(counts) != events {
		l.fail(fmt.Sprintf("tokens of %d token events for %d", len(counts), events))
		return metrics.ChunkTokens{}
	}
	return metrics.CountedChunkTokens(counts)
}
