package metrics

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
)

// fullRecord sets every field of a record to something other than its
// zero value.
func fullRecord() RequestResult {
	return RequestResult{
		Index: 7, Success: true, Error: "e", PromptLen: -2, OutputTokens: -5, ChunkEvents: 4,
		GeneratedText: "text", ArrivalNs: 10, StartNs: -20, QueueNs: 99, TTFTNs: 30, LatencyNs: 1 << 40,
		ITLNs:             []int64{1, -1, 1 << 62},
		Breakdown:         Breakdown{Known: true, NewConn: true, ConnectNs: 1, TLSNs: 2, SendNs: 3, ServerNs: 4, FirstTokenNs: 5},
		ChunkTokens:       CountedChunkTokens([]uint16{0, 3, 3, 65535}),
		NumInputSequences: 3, TextTokens: 1 << 33, TextCounted: true,
		Reasoning:  Reasoning{FirstAnswerNs: 1, ReasoningChunks: 2, ReasoningTokens: 3, FirstToolCallNs: 4, ToolCallChunks: 5, ToolCalls: 6},
		HTTPStatus: 503, ServerMessage: "m", ServerTokens: -1 << 40, ServerUsage: UsageInTokenChunk,
	}
}

// TestRecordRoundTrip: every field comes back, and so does a record of
// zero values (the decoder's reused arrays notwithstanding).
func TestRecordRoundTrip(t *testing.T) {
	full := fullRecord()
	empty := RequestResult{Reasoning: noReasoning, ITLNs: []int64{}}
	missing := RequestResult{ChunkTokens: ChunkTokens{State: RunningMissing}, Reasoning: noReasoning, ITLNs: []int64{}}
	var dec recordDecoder
	var got RequestResult
	for _, want := range []RequestResult{full, empty, full, missing} {
		if err := dec.decode(appendRecord(nil, &want), &got); err != nil {
			t.Fatal(err)
		}
		if want.ChunkTokens.counts == nil {
			want.ChunkTokens.counts = got.ChunkTokens.counts[:0]
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("read back\n%+v\nwant\n%+v", got, want)
		}
	}
}

// TestOpenLogTornTail: a saved log cut inside its last frame reads as the
// records before it, and says it was torn.
func TestOpenLogTornTail(t *testing.T) {
	b := NewLogBuilder(LogConfig{MemoryBytes: -1, ChunkBytes: 1})
	for i := range 5 {
		r := fullRecord()
		r.Index = i
		b.Append(&r)
	}
	path := filepath.Join(t.TempDir(), "run.records")
	if err := b.Log().WriteFile(path); err != nil {
		t.Fatal(err)
	}
	whole, torn, err := OpenLog(path)
	if err != nil || torn || whole.Len() != 5 {
		t.Fatalf("whole log: %v records, torn %v, %v", whole.Len(), torn, err)
	}
	info, _ := os.Stat(path)
	if err := os.Truncate(path, info.Size()-3); err != nil {
		t.Fatal(err)
	}
	cut, torn, err := OpenLog(path)
	if err != nil || !torn || cut.Len() != 4 {
		t.Fatalf("cut log: %v records, torn %v, %v", cut.Len(), torn, err)
	}
	for i, r := range cut.All() {
		if r.Index != i || r.GeneratedText != "text" {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	if _, _, err := OpenLog(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("a missing file opened")
	}
}

// FuzzRecordDecode: a record from anywhere (a partial from the network, a
// damaged file) decodes or fails; it never panics, and what decodes
// encodes back to a record that decodes the same.
func FuzzRecordDecode(f *testing.F) {
	full := fullRecord()
	f.Add(appendRecord(nil, &full))
	f.Add(appendRecord(nil, &RequestResult{Reasoning: noReasoning}))
	f.Add([]byte{0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		var dec recordDecoder
		var r RequestResult
		if dec.decode(b, &r) != nil {
			return
		}
		var again RequestResult
		if err := dec.decode(appendRecord(nil, &r), &again); err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if !reflect.DeepEqual(r.Clone(), again.Clone()) {
			t.Fatalf("round trip changed the record:\n%+v\n%+v", r, again)
		}
	})
}

// fullDisk is a log file that takes limit bytes, then fails as a full
// disk does.
type fullDisk struct {
	LogFile
	limit   int64
	written int64
}

func (f *fullDisk) WriteAt(b []byte, off int64) (int, error) {
	if f.written+int64(len(b)) > f.limit {
		return 0, syscall.ENOSPC
	}
	f.written += int64(len(b))
	return f.LogFile.WriteAt(b, off)
}

// TestLogOnAFullDisk: when the file stops taking frames, the first error
// is told (by each store that meets it), and every record still reads back, in order: the frames
// written, then those kept in memory.
func TestLogOnAFullDisk(t *testing.T) {
	var told []error
	cfg := LogConfig{MemoryBytes: -1, ChunkBytes: 64, Dir: t.TempDir(),
		OnError: func(err error) { told = append(told, err) },
		File: func(dir string) (LogFile, error) {
			f, err := createLogFile(dir, false)
			return &fullDisk{LogFile: f, limit: 2000}, err
		}}
	sp := NewSpool(cfg)
	rec := NewRecorder(Options{Spool: sp})
	const n = 300
	var s Stream
	for i := range n {
		rec.Begin(&s, i, 1, 0, int64(i))
		s.Token(int64(i)+5, nil)
		s.Token(int64(i)+9, nil)
		rec.EndStream(&s)
	}
	d, err := Gather(SortOptions{Requests: n}, rec)
	if err == nil || !errors.Is(err, syscall.ENOSPC) || len(told) == 0 {
		t.Fatalf("gather: %v; told %v; want ENOSPC", err, told)
	}
	disk, mem := d.Log.Bytes()
	if disk == 0 || mem == 0 {
		t.Errorf("log: %d bytes on disk, %d in memory; want both", disk, mem)
	}
	if d.Log.Len() != n {
		t.Fatalf("%d records, want %d", d.Log.Len(), n)
	}
	for i, r := range d.Log.All() {
		if r.Index != i || !r.Success || r.StartNs != int64(i) || len(r.ITLNs) != 1 || r.ITLNs[0] != 4 {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
}
