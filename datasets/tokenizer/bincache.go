package tokenizer

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unsafe"
)

// A BPE tokenizer.json spends most of its load resolving the merges (two
// or three lookups each in a vocabulary larger than the CPU caches) and
// reading the vocabulary. The model's tables (table.go) are kept in a binary
// file under the user's cache directory, named after the SHA-256 of the
// tokenizer.json bytes, laid out as they are in memory; later loads map the
// file and use the tables where they lie, skipping both in the JSON. Mapped,
// they are no part of the Go heap: the garbage collector neither scans them
// nor counts them when it sizes the heap, and they are shared with every
// other process using the same tokenizer.
//
// The file is trusted for nothing: its header must carry this format's
// magic and version and the same SHA-256, its sections must add up, a
// CRC-32C covers the rest, and every offset, slot and id is range-checked
// before use; anything else and the tokenizer.json is parsed as if there
// were no cache, and the file rewritten. It is written to a temporary file
// and renamed into place, so concurrent runs never see half of one, and
// never written in place, so a mapping never sees it change.
// STAMPEDE_TOKENIZER_CACHE=off turns the cache off; a path there puts it in
// that directory instead.

// binCacheVersion changes whenever the layout or the meaning of the data
// changes (strHash included).
const (
	binCacheMagic   = "STPDTOK\x00"
	binCacheVersion = 3
	// magic, version, sha256, flags, ids, crc, spans, section lengths,
	// padded to 8
	binHeaderSize = 8 + 4 + 32 + 4 + 4 + 4 + 4*4 + 4*binSections + 4
	binSections   = 9
)

// The sections, in file order, each starting 8-aligned.
const (
	secTokenText  = iota // the tokens as written, end to end by id
	secTokenOffs         // uint32 × ids+1
	secKnown             // one byte per id: 1 when it has a token
	secTokenSlots        // uint64 slots over the tokens (not in byte mode)
	secByteText          // byte mode: each id's bytes, end to end
	secByteOffs          // byte mode: uint32 × ids+1
	secByteSlots         // byte mode: uint64 slots over the bytes
	secOutside           // byte mode: uint32 ids of tokens outside the alphabet
	secMerges            // 16-byte merge slots
)

const flagByteMode = 1

// flatModel is what the cache holds: a BPE model's tables.
type flatModel struct {
	// spans are where the model's vocab and merges values lie in the
	// file, [start, end): a load from the cache steps over them.
	spans    [2][2]uint32
	byteMode bool
	tokens   strTable // as written, by id; indexed unless byteMode
	known    []bool
	vocab    strTable // byteMode: each id's bytes, indexed over the alphabet's
	outside  []uint32 // byteMode: the known ids outside the alphabet
	merges   mergeTable
	mapped   []byte // the file's mapping the tables lie in
}

// outsideMap is the byte-mode lookup of the tokens outside the alphabet.
func (m *flatModel) outsideMap() map[string]int32 {
	if len(m.outside) == 0 {
		return nil
	}
	out := make(map[string]int32, len(m.outside))
	for _, id := range m.outside {
		out[m.tokens.at(int32(id))] = int32(id)
	}
	return out
}

// binCacheDir is the cache's directory, or "" when it is off. A test
// binary keeps out of the user's cache unless the variable names one.
func binCacheDir() string {
	switch v := os.Getenv("STAMPEDE_TOKENIZER_CACHE"); v {
	case "off", "0", "false", "no":
		return ""
	case "":
		if testing.Testing() {
			return ""
		}
		dir, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		return filepath.Join(dir, "stampede", "tokenizers")
	default:
		return v
	}
}

func binCachePath(dir string, sum [32]byte) string {
	return filepath.Join(dir, hex.EncodeToString(sum[:])+".bpe")
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// littleEndian: the file is little-endian and used in place, so a
// big-endian machine has no cache.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// readBinCache returns the cached model of the file whose SHA-256 is sum,
// or nil when there is none or it fails validation.
func readBinCache(dir string, sum [32]byte) *flatModel {
	if !littleEndian {
		return nil
	}
	data, err := mapFile(binCachePath(dir, sum))
	if err != nil {
		return nil
	}
	m, err := decodeBinCache(data, sum)
	if err != nil {
		unmapFile(data)
		return nil
	}
	return m
}

func align8(n int) int { return (n + 7) &^ 7 }

// asSlice views b (8-aligned, little-endian) as a []T.
func asSlice[T uint32 | uint64 | mergeSlot](b []byte) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/size)
}

func bytesOf[T uint32 | uint64 | mergeSlot](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}

func decodeBinCache(data []byte, sum [32]byte) (*flatModel, error) {
	if len(data) < binHeaderSize || string(data[:8]) != binCacheMagic {
		return nil, errors.New("not a tokenizer cache file")
	}
	le := binary.LittleEndian
	if le.Uint32(data[8:]) != binCacheVersion || [32]byte(data[12:44]) != sum {
		return nil, errors.New("another version or source")
	}
	flags, nIDs, crc := le.Uint32(data[44:]), int(le.Uint32(data[48:])), le.Uint32(data[52:])
	m := &flatModel{byteMode: flags&flagByteMode != 0}
	for i := range 4 {
		m.spans[i/2][i%2] = le.Uint32(data[56+4*i:])
	}
	if nIDs > maxTokenID+1 || uintptr(unsafe.Pointer(unsafe.SliceData(data)))%8 != 0 {
		return nil, errors.New("sizes do not add up")
	}
	var secs [binSections][]byte
	at := binHeaderSize
	for i := range secs {
		n := int(le.Uint32(data[72+4*i:]))
		if n > len(data)-at {
			return nil, errors.New("sizes do not add up")
		}
		secs[i] = data[at : at+n : at+n]
		at = min(align8(at+n), len(data))
	}
	if at != len(data) {
		return nil, errors.New("sizes do not add up")
	}
	if crc32.Checksum(data[binHeaderSize:], crcTable) != crc {
		return nil, errors.New("checksum mismatch")
	}
	if len(secs[secKnown]) != nIDs {
		return nil, errors.New("sizes do not add up")
	}
	m.known = make([]bool, nIDs)
	for i, k := range secs[secKnown] {
		if k > 1 {
			return nil, errors.New("bad known flag")
		}
		m.known[i] = k == 1
	}
	var err error
	if m.tokens, err = tableOf(secs[secTokenText], secs[secTokenOffs], secs[secTokenSlots], nIDs, m.known); err != nil {
		return nil, err
	}
	if m.byteMode {
		if len(m.tokens.slots) != 0 {
			return nil, errors.New("byte mode with token slots")
		}
		if m.vocab, err = tableOf(secs[secByteText], secs[secByteOffs], secs[secByteSlots], nIDs, m.known); err != nil {
			return nil, err
		}
		m.outside = asSlice[uint32](secs[secOutside])
		for _, id := range m.outside {
			if int(id) >= nIDs || !m.known[id] {
				return nil, errors.New("outside id out of range")
			}
		}
	} else if len(secs[secByteText])+len(secs[secByteOffs])+len(secs[secByteSlots])+len(secs[secOutside]) != 0 {
		return nil, errors.New("byte tables without byte mode")
	}
	slots := asSlice[mergeSlot](secs[secMerges])
	if len(slots) == 0 || len(slots)&(len(slots)-1) != 0 || len(secs[secMerges])%16 != 0 {
		return nil, errors.New("merge table size")
	}
	isKnown := func(id int32) bool { return id >= 0 && int(id) < nIDs && m.known[id] }
	for _, s := range slots {
		if s.key == 0 {
			continue
		}
		k := s.key - 1
		if k>>56 != 0 || !isKnown(int32(k>>32)) || !isKnown(int32(uint32(k))) || !isKnown(s.newID) || s.rank < 0 {
			return nil, errors.New("merge out of range")
		}
	}
	m.merges = mergeTableOf(slots)
	m.mapped = data
	return m, nil
}

// tableOf checks and wraps a strTable's sections.
func tableOf(text, offsB, slotsB []byte, nIDs int, known []bool) (strTable, error) {
	if len(offsB) != 4*(nIDs+1) || len(slotsB)%8 != 0 {
		return strTable{}, errors.New("table sizes do not add up")
	}
	offs := asSlice[uint32](offsB)
	if offs[0] != 0 || int(offs[nIDs]) != len(text) {
		return strTable{}, errors.New("offsets out of range")
	}
	for i := 1; i <= nIDs; i++ {
		if offs[i] < offs[i-1] {
			return strTable{}, errors.New("offsets out of order")
		}
	}
	slots := asSlice[uint64](slotsB)
	if len(slots)&(len(slots)-1) != 0 {
		return strTable{}, errors.New("slot count")
	}
	for _, s := range slots {
		if s == 0 {
			continue
		}
		if id := int(uint32(s)) - 1; id < 0 || id >= nIDs || !known[id] {
			return strTable{}, errors.New("slot out of range")
		}
	}
	if len(slots) != 0 && !slices.Contains(slots, 0) {
		return strTable{}, errors.New("slots full") // a lookup would never end
	}
	return strTable{text: unsafeString(text), offs: offs, slots: slots}, nil
}

func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func encodeBinCache(m *flatModel, sum [32]byte) []byte {
	var out []byte
	for _, part := range binCacheParts(m, sum) {
		out = append(out, part...)
	}
	return out
}

// binCacheParts is the file of m, in pieces: the header, then each section
// and its padding, the sections the tables' own memory (not copied).
func binCacheParts(m *flatModel, sum [32]byte) [][]byte {
	le := binary.LittleEndian
	known := make([]byte, len(m.known))
	for i, k := range m.known {
		if k {
			known[i] = 1
		}
	}
	var secs [binSections][]byte
	secs[secTokenText] = stringBytes(m.tokens.text)
	secs[secTokenOffs] = bytesOf(m.tokens.offs)
	secs[secKnown] = known
	if m.byteMode {
		secs[secByteText] = stringBytes(m.vocab.text)
		secs[secByteOffs] = bytesOf(m.vocab.offs)
		secs[secByteSlots] = bytesOf(m.vocab.slots)
		secs[secOutside] = bytesOf(m.outside)
	} else {
		secs[secTokenSlots] = bytesOf(m.tokens.slots)
	}
	secs[secMerges] = bytesOf(m.merges.slots)
	header := make([]byte, binHeaderSize)
	copy(header, binCacheMagic)
	le.PutUint32(header[8:], binCacheVersion)
	copy(header[12:], sum[:])
	if m.byteMode {
		le.PutUint32(header[44:], flagByteMode)
	}
	le.PutUint32(header[48:], uint32(len(m.known)))
	for i := range 4 {
		le.PutUint32(header[56+4*i:], m.spans[i/2][i%2])
	}
	var zeros [8]byte
	parts := [][]byte{header}
	crc := uint32(0)
	for i, sec := range secs {
		le.PutUint32(header[72+4*i:], uint32(len(sec)))
		pad := zeros[:align8(len(sec))-len(sec)]
		crc = crc32.Update(crc32.Update(crc, crcTable, sec), crcTable, pad)
		parts = append(parts, sec, pad)
	}
	le.PutUint32(header[52:], crc)
	return parts
}

// stringBytes views s's bytes, which must not be written.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// writeBinCache stores m atomically; failing to is not an error of the
// load, only a slower next one.
func writeBinCache(dir string, sum [32]byte, m *flatModel) error {
	if !littleEndian {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	for _, part := range binCacheParts(m, sum) {
		if err == nil {
			_, err = f.Write(part)
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), binCachePath(dir, sum))
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("tokenizer cache: %w", err)
	}
	return nil
}

func fileSum(data []byte) [32]byte { return sha256.Sum256(data) }

// FileSHA256 is the SHA-256 of the tokenizer.json t was loaded from, as
// the binary cache names it, so a run can record which tokenizer it used
// without reading the file again; ok is false for the other formats.
func (t *Tokenizer) FileSHA256() (sum [32]byte, ok bool) {
	return t.fileSum, t.fileSum != [32]byte{}
}
