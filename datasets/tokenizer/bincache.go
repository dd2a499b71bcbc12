package tokenizer

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A BPE tokenizer.json spends most of its load resolving the merges (two
// or three lookups each in a vocabulary larger than the CPU caches) and
// reading the vocabulary. Both are kept, resolved, in a binary file under
// the user's cache directory, named after the SHA-256 of the tokenizer.json
// bytes; later loads read them from there and skip both in the JSON.
//
// The file is trusted for nothing: its header must carry this format's
// magic and version and the same SHA-256, its sizes must add up, a CRC-32C
// covers the rest, and every id is range-checked before use; anything else
// and the tokenizer.json is parsed as if there were no cache, and the file
// rewritten. It is written to a temporary file and renamed into place, so
// concurrent runs never see half of one. STAMPEDE_TOKENIZER_CACHE=off
// turns the cache off; a path there puts it in that directory instead.

// binCacheVersion changes whenever the layout or the meaning of the data
// changes.
const (
	binCacheMagic   = "STPDTOK\x00"
	binCacheVersion = 2
	binHeaderSize   = 8 + 4 + 32 + 4*4 + 4*4
)

// resolvedModel is what the cache holds: the vocabulary (the tokens as
// written, unescaped, end to end in text; ends[i] closes ids[i]'s) and the
// merges in rank order.
type resolvedModel struct {
	// spans are where the model's vocab and merges values lie in the
	// file, [start, end): a load from the cache steps over them.
	spans  [2][2]uint32
	text   string
	ends   []uint32
	ids    []int32
	merges []resolvedMerge
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

// readBinCache returns the cached model of the file whose SHA-256 is sum,
// or nil when there is none or it fails validation.
func readBinCache(dir string, sum [32]byte) *resolvedModel {
	data, err := os.ReadFile(binCachePath(dir, sum))
	if err != nil {
		return nil
	}
	m, err := decodeBinCache(data, sum)
	if err != nil {
		return nil
	}
	return m
}

func decodeBinCache(data []byte, sum [32]byte) (*resolvedModel, error) {
	if len(data) < binHeaderSize+4 || string(data[:8]) != binCacheMagic {
		return nil, errors.New("not a tokenizer cache file")
	}
	le := binary.LittleEndian
	if le.Uint32(data[8:]) != binCacheVersion || [32]byte(data[12:44]) != sum {
		return nil, errors.New("another version or source")
	}
	nVocab, textLen, nMerges, crc := int(le.Uint32(data[44:])), int(le.Uint32(data[48:])), int(le.Uint32(data[52:])), le.Uint32(data[56:])
	var spans [2][2]uint32
	for i := range 4 {
		spans[i/2][i%2] = le.Uint32(data[60+4*i:])
	}
	body := data[binHeaderSize:]
	if nVocab > maxTokenID+1 || nMerges > 1<<26 || len(body) != 8*nVocab+textLen+16*nMerges {
		return nil, errors.New("sizes do not add up")
	}
	if crc32.Checksum(body, crcTable) != crc {
		return nil, errors.New("checksum mismatch")
	}
	m := &resolvedModel{spans: spans, ids: make([]int32, nVocab), ends: make([]uint32, nVocab), merges: make([]resolvedMerge, nMerges)}
	prev := uint32(0)
	for i := range nVocab {
		id, end := int32(le.Uint32(body[8*i:])), le.Uint32(body[8*i+4:])
		if id < 0 || id > maxTokenID || end < prev || int(end) > textLen {
			return nil, errors.New("vocabulary entry out of range")
		}
		m.ids[i], m.ends[i], prev = id, end, end
	}
	m.text = string(body[8*nVocab : 8*nVocab+textLen])
	body = body[8*nVocab+textLen:]
	for i := range m.merges {
		r := body[16*i:]
		a, b := int32(le.Uint32(r)), int32(le.Uint32(r[4:]))
		rank, newID := int32(le.Uint32(r[8:])), int32(le.Uint32(r[12:]))
		if a < 0 || b < 0 || newID < 0 || a > maxTokenID || b > maxTokenID || newID > maxTokenID || rank < 0 {
			return nil, errors.New("merge out of range")
		}
		m.merges[i] = resolvedMerge{pairKey(a, b), mergeRule{rank: rank, newID: newID}}
	}
	return m, nil
}

func encodeBinCache(m *resolvedModel, sum [32]byte) []byte {
	le := binary.LittleEndian
	out := make([]byte, binHeaderSize, binHeaderSize+8*len(m.ids)+len(m.text)+16*len(m.merges))
	copy(out, binCacheMagic)
	le.PutUint32(out[8:], binCacheVersion)
	copy(out[12:], sum[:])
	le.PutUint32(out[44:], uint32(len(m.ids)))
	le.PutUint32(out[48:], uint32(len(m.text)))
	le.PutUint32(out[52:], uint32(len(m.merges)))
	for i := range 4 {
		le.PutUint32(out[60+4*i:], m.spans[i/2][i%2])
	}
	for i, id := range m.ids {
		out = le.AppendUint32(le.AppendUint32(out, uint32(id)), m.ends[i])
	}
	out = append(out, m.text...)
	for _, r := range m.merges {
		out = le.AppendUint32(out, uint32(r.key>>32))
		out = le.AppendUint32(out, uint32(r.key))
		out = le.AppendUint32(out, uint32(r.rule.rank))
		out = le.AppendUint32(out, uint32(r.rule.newID))
	}
	le.PutUint32(out[56:], crc32.Checksum(out[binHeaderSize:], crcTable))
	return out
}

// writeBinCache stores m atomically; failing to is not an error of the
// load, only a slower next one.
func writeBinCache(dir string, sum [32]byte, m *resolvedModel) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(encodeBinCache(m, sum))
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

// vocabMap builds the vocabulary map from the cached entries, keys cut
// from the one text.
func (m *resolvedModel) vocabMap() map[string]int32 {
	vocab := make(map[string]int32, len(m.ids))
	start := uint32(0)
	for i, id := range m.ids {
		vocab[m.text[start:m.ends[i]]] = id
		start = m.ends[i]
	}
	return vocab
}

// newResolvedModel records a vocabulary and resolved merges for the cache.
func newResolvedModel(vocab map[string]int32, merges []resolvedMerge) *resolvedModel {
	// In id order, so that a file's cache is always the same bytes.
	type entry struct {
		tok string
		id  int32
	}
	entries := make([]entry, 0, len(vocab))
	for tok, id := range vocab {
		entries = append(entries, entry{tok, id})
	}
	slices.SortFunc(entries, func(a, b entry) int { return cmp.Or(cmp.Compare(a.id, b.id), strings.Compare(a.tok, b.tok)) })
	m := &resolvedModel{ids: make([]int32, 0, len(vocab)), ends: make([]uint32, 0, len(vocab)), merges: merges}
	var text []byte
	for _, e := range entries {
		text = append(text, e.tok...)
		m.ids = append(m.ids, e.id)
		m.ends = append(m.ends, uint32(len(text)))
	}
	m.text = string(text)
	return m
}

func fileSum(data []byte) [32]byte { return sha256.Sum256(data) }
