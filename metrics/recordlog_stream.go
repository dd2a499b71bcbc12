package metrics

import "encoding/binary"

// Records that travel: a cluster's agents send their records to agent 0
// in the record log's own encoding, chunk by chunk, and agent 0 appends
// each one it has checked to its spool without encoding it again.

// RecordVersion is the version of the record encoding (record.go), which
// a reader of records written elsewhere checks.
const RecordVersion = logVersion

// AppendRecord appends r's record, encoded as the record log holds it, to
// dst.
func AppendRecord(dst []byte, r *RequestResult) []byte { return appendRecord(dst, r) }

// A RecordDecoder reads records AppendRecord wrote. It interns repeated
// error texts and server messages, as a pass over a log does; it is not
// safe for concurrent use.
type RecordDecoder struct{ d recordDecoder }

// Decode reads rec into r, reusing r's arrays (r's ITLNs and chunk counts
// are valid until the next Decode into r). A record that does not decode
// whole, or has bytes after its end, is an error, and r is then
// unspecified.
func (d *RecordDecoder) Decode(rec []byte, r *RequestResult) error { return d.d.decode(rec, r) }

// AppendEncoded adds a record AppendRecord encoded, as Append adds r's:
// the bytes are copied into the writer's chunk, not kept. The caller has
// checked them (RecordDecoder.Decode): a record that does not decode
// would end every later pass over the log.
func (w *LogWriter) AppendEncoded(rec []byte) {
	need := binary.MaxVarintLen64 + len(rec)
	if w.chunk != nil && len(w.chunk)+need > cap(w.chunk) {
		w.seal()
	}
	if w.chunk == nil {
		w.chunk = w.newChunk(need)
	}
	w.chunk = binary.AppendUvarint(w.chunk, uint64(len(rec)))
	w.chunk = append(w.chunk, rec...)
	w.records++
}
