package metrics

import (
	"encoding/binary"
	"errors"
	"math"
)

// The record: one finished request as the record log stores it. Every
// field of a RequestResult is kept exactly; what is usually zero costs a
// flag bit, not a byte. Integers are encoding/binary varints (zig-zag for
// the signed ones), times and gaps in nanoseconds, the clock's own unit:
//
//	index                         uvarint (the request's position in the run)
//	flags                         uvarint (record* bits below)
//	arrival                       varint
//	start − arrival               varint
//	queue − (start − arrival)     varint (0 but for a skipped request's record)
//	prompt, chunks, sequences     varint
//	output tokens                 varint (usage.completion_tokens as Python reads it)
//	ttft, latency                 varint
//	status                        varint
//	server tokens, usage source   varint, uvarint           only with recordServed
//	error                         uvarint length + bytes    only with recordError
//	server message                the same                  only with recordMessage
//	text                          the same                  only with recordText
//	text tokens                   varint                    only with recordTextCounted
//	breakdown                     5 uvarints                only with recordBreakdown
//	reasoning                     6 varints                 only with recordReasoning
//	gaps                          uvarint count, then each gap as a varint
//	running usage                 uvarint state, then with RunningCounted the
//	                              count of each token event as runs: uvarint
//	                              run count, then each run's tokens and length
//	                                                        only with recordRunning
//
// A decoder reads a record into a RequestResult it reuses: its ITLNs and
// ChunkTokens keep their arrays, so a pass over a log allocates nothing per
// record but the strings of the records that carry text.
const (
	recordSuccess = 1 << iota
	recordBreakdown
	recordNewConn
	recordError
	recordMessage
	recordText
	recordTextCounted
	recordReasoning
	recordRunning
	recordServed
)

// maxRecordBytes bounds one record: a stream of 2^26 token events (a
// day's stream at 1,000 tokens/s) fits many times over; a larger length
// in a log is damage, not a record.
const maxRecordBytes = 1 << 30

// noReasoning is Reasoning's value for a request without reasoning or
// tool calls, the one that costs no bytes.
var noReasoning = Reasoning{FirstAnswerNs: -1, ReasoningTokens: -1, FirstToolCallNs: -1}

// appendRecord appends r's record to dst.
func appendRecord(dst []byte, r *RequestResult) []byte {
	flags := uint64(0)
	set := func(on bool, bit uint64) {
		if on {
			flags |= bit
		}
	}
	set(r.Success, recordSuccess)
	set(r.Breakdown.Known, recordBreakdown)
	set(r.Breakdown.NewConn, recordNewConn)
	set(r.Error != "", recordError)
	set(r.ServerMessage != "", recordMessage)
	set(r.GeneratedText != "", recordText)
	set(r.TextCounted, recordTextCounted)
	set(r.Reasoning != noReasoning, recordReasoning)
	set(r.ChunkTokens.State != RunningUntracked, recordRunning)
	set(r.ServerTokens != 0 || r.ServerUsage != UsageNone, recordServed)

	dst = binary.AppendUvarint(dst, uint64(r.Index))
	dst = binary.AppendUvarint(dst, flags)
	dst = binary.AppendVarint(dst, r.ArrivalNs)
	dst = binary.AppendVarint(dst, r.StartNs-r.ArrivalNs)
	dst = binary.AppendVarint(dst, r.QueueNs-(r.StartNs-r.ArrivalNs))
	dst = binary.AppendVarint(dst, int64(r.PromptLen))
	dst = binary.AppendVarint(dst, int64(r.ChunkEvents))
	dst = binary.AppendVarint(dst, int64(r.NumInputSequences))
	dst = binary.AppendVarint(dst, int64(r.OutputTokens))
	dst = binary.AppendVarint(dst, r.TTFTNs)
	dst = binary.AppendVarint(dst, r.LatencyNs)
	dst = binary.AppendVarint(dst, int64(r.HTTPStatus))
	if flags&recordServed != 0 {
		dst = binary.AppendVarint(dst, r.ServerTokens)
		dst = binary.AppendUvarint(dst, uint64(r.ServerUsage))
	}
	if flags&recordError != 0 {
		dst = appendLogString(dst, r.Error)
	}
	if flags&recordMessage != 0 {
		dst = appendLogString(dst, r.ServerMessage)
	}
	if flags&recordText != 0 {
		dst = appendLogString(dst, r.GeneratedText)
	}
	if flags&recordTextCounted != 0 {
		dst = binary.AppendVarint(dst, int64(r.TextTokens))
	}
	if flags&recordBreakdown != 0 {
		b := &r.Breakdown
		for _, v := range [...]int64{b.ConnectNs, b.TLSNs, b.SendNs, b.ServerNs, b.FirstTokenNs} {
			dst = binary.AppendVarint(dst, v)
		}
	}
	if flags&recordReasoning != 0 {
		x := &r.Reasoning
		for _, v := range [...]int64{x.FirstAnswerNs, int64(x.ReasoningChunks), x.ReasoningTokens,
			x.FirstToolCallNs, int64(x.ToolCallChunks), int64(x.ToolCalls)} {
			dst = binary.AppendVarint(dst, v)
		}
	}
	dst = binary.AppendUvarint(dst, uint64(len(r.ITLNs)))
	for _, gap := range r.ITLNs {
		dst = binary.AppendVarint(dst, gap)
	}
	if flags&recordRunning != 0 {
		dst = binary.AppendUvarint(dst, uint64(r.ChunkTokens.State))
		if r.ChunkTokens.State == RunningCounted {
			dst = appendTokenRuns(dst, r.ChunkTokens.counts)
		}
	}
	return dst
}

// appendTokenRuns appends counts as runs of equal values: most streams
// carry one token a chunk, so a request's counts are a run or two.
func appendTokenRuns(dst []byte, counts []uint16) []byte {
	runs := 0
	for i := range counts {
		if i == 0 || counts[i] != counts[i-1] {
			runs++
		}
	}
	dst = binary.AppendUvarint(dst, uint64(runs))
	for i := 0; i < len(counts); {
		j := i + 1
		for j < len(counts) && counts[j] == counts[i] {
			j++
		}
		dst = binary.AppendUvarint(dst, uint64(counts[i]))
		dst = binary.AppendUvarint(dst, uint64(j-i))
		i = j
	}
	return dst
}

func appendLogString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// errDamagedRecord is a record that does not decode: a log written by
// another version, or damaged on disk.
var errDamagedRecord = errors.New("damaged record")

// recordDecoder reads records. It interns the error texts and server
// messages it has seen, since a run's failures mostly repeat a few texts:
// a pass over a log of a million failures then allocates for each text
// once.
type recordDecoder struct {
	b    []byte
	err  error
	text map[string]string
}

// maxInterned bounds the texts a decoder keeps: texts that carry a count
// or an id could make one per record.
const maxInterned = 4096

func (d *recordDecoder) fail() {
	if d.err == nil {
		d.err = errDamagedRecord
	}
	d.b = nil
}

func (d *recordDecoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *recordDecoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

// small reads a varint as an int (a count a server may have sent: any
// value).
func (d *recordDecoder) small() int { return int(d.varint()) }

// int reads a uvarint that must fit an int.
func (d *recordDecoder) int() int {
	v := d.uvarint()
	if v > math.MaxInt32*2 {
		d.fail()
		return 0
	}
	return int(v)
}

func (d *recordDecoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	b := d.b[:n]
	d.b = d.b[n:]
	return b
}

// interned returns the string of b, from the decoder's table when it was
// seen before.
func (d *recordDecoder) interned(b []byte) string {
	if s, ok := d.text[string(b)]; ok {
		return s
	}
	s := string(b)
	if d.text == nil {
		d.text = make(map[string]string)
	}
	if len(d.text) < maxInterned {
		d.text[s] = s
	}
	return s
}

// decode reads the record in b into r, reusing r's arrays.
func (d *recordDecoder) decode(b []byte, r *RequestResult) error {
	d.b, d.err = b, nil
	itls, counts := r.ITLNs[:0], r.ChunkTokens.counts[:0]
	*r = RequestResult{}
	r.Index = d.int()
	flags := d.uvarint()
	r.ArrivalNs = d.varint()
	r.StartNs = r.ArrivalNs + d.varint()
	r.QueueNs = (r.StartNs - r.ArrivalNs) + d.varint()
	r.PromptLen = d.small()
	r.ChunkEvents = d.small()
	r.NumInputSequences = d.small()
	r.OutputTokens = int(d.varint())
	r.TTFTNs = d.varint()
	r.LatencyNs = d.varint()
	r.HTTPStatus = d.small()
	r.Success = flags&recordSuccess != 0
	if flags&recordServed != 0 {
		r.ServerTokens = d.varint()
		r.ServerUsage = UsageSource(d.uvarint())
	}
	if flags&recordError != 0 {
		r.Error = d.interned(d.bytes())
	}
	if flags&recordMessage != 0 {
		r.ServerMessage = d.interned(d.bytes())
	}
	if flags&recordText != 0 {
		r.GeneratedText = string(d.bytes())
	}
	if flags&recordTextCounted != 0 {
		r.TextCounted, r.TextTokens = true, d.small()
	}
	if flags&recordBreakdown != 0 {
		r.Breakdown = Breakdown{Known: true, NewConn: flags&recordNewConn != 0,
			ConnectNs: d.varint(), TLSNs: d.varint(), SendNs: d.varint(), ServerNs: d.varint(), FirstTokenNs: d.varint()}
	}
	r.Reasoning = noReasoning
	if flags&recordReasoning != 0 {
		r.Reasoning = Reasoning{FirstAnswerNs: d.varint(), ReasoningChunks: int(d.varint()), ReasoningTokens: d.varint(),
			FirstToolCallNs: d.varint(), ToolCallChunks: int(d.varint()), ToolCalls: int(d.varint())}
	}
	n := d.uvarint()
	if n > uint64(len(d.b)) { // each gap takes a byte at least
		d.fail()
		n = 0
	}
	for range n {
		itls = append(itls, d.varint())
	}
	r.ITLNs = itls
	r.ChunkTokens.counts = counts
	if flags&recordRunning != 0 {
		r.ChunkTokens.State = RunningUsage(d.uvarint())
		if r.ChunkTokens.State == RunningCounted {
			runs := d.uvarint()
			if runs > uint64(len(d.b)) { // each run takes two bytes at least
				d.fail()
			}
			for range runs {
				k, length := d.uvarint(), d.uvarint()
				if d.err != nil || k > maxChunkTokens || length > uint64(len(itls))+1-uint64(len(counts)) {
					d.fail()
					break
				}
				for range length {
					counts = append(counts, uint16(k))
				}
			}
			r.ChunkTokens.counts = counts
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail()
	}
	return d.err
}

// recordIndex reads the index a record starts with.
func recordIndex(b []byte) (int, bool) {
	v, n := binary.Uvarint(b)
	if n <= 0 || v > math.MaxInt32*2 {
		return 0, false
	}
	return int(v), true
}

// reindexRecord appends b's record to dst with its index replaced.
func reindexRecord(dst, b []byte, index int) []byte {
	_, n := binary.Uvarint(b)
	dst = binary.AppendUvarint(dst, uint64(index))
	return append(dst, b[n:]...)
}
