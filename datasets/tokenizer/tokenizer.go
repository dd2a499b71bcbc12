package tokenizer

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Tokenizer encodes text to token ids and back exactly as Hugging Face's
// tokenizers library does for the same tokenizer.json (or as tiktoken does
// for a .tiktoken file). It is safe for concurrent use.
type Tokenizer struct {
	normalizer normalizer
	pre        []preTokenizer
	model      model
	post       postProcessor
	dec        decoder

	added           []addedToken
	rawTrie         *tokenTrie // added tokens matched in the raw text
	normTrie        *tokenTrie // added tokens matched after normalization
	addedIDs        []int32    // the id each added token encodes to
	specialIDs      []int32    // ascending; AllSpecialIDs
	addedSpecialIDs []int32    // ascending; SpecialAddedIDs

	// cleanUpSpaces is tokenizer_config.json's clean_up_tokenization_spaces.
	cleanUpSpaces bool
	// tekken is set for Mistral's tekken.json, which decodes its own way
	// (decodeTekken).
	tekken bool
	// fileSum is the SHA-256 of the tokenizer.json it was loaded from (the
	// binary cache's key); zero for other formats.
	fileSum [32]byte

	tokens    tokenList // id -> token as written in the vocabulary
	known     []bool    // id has a token
	special   []bool    // id's token is a special added token
	vocabSize int

	// byteLevel holds, when the decoder is exactly ByteLevel, each id's
	// bytes back to back, so decoding is a copy per token: the ids of
	// byteLevel, then those of byteTail. A byte-level BPE model's table
	// is byteLevel itself.
	byteLevel, byteTail strTable

	// mapped is the binary cache file the model's tables lie in, when
	// they came from there.
	mapped []byte

	// chunks caches the ids of chunks of long texts, when they can be cut
	// exactly (chunk.go); nil otherwise.
	chunks *wordCache

	pool sync.Pool
	// rounds keeps NewRounds' states between prompts.
	rounds sync.Pool
	// gaveUp is the first encode whose split pattern gave up (Err).
	gaveUp atomic.Pointer[PatternError]
}

// Err is the first encode that failed since the load: a split pattern that
// backtracked past its bound on a text (*PatternError, naming the
// pattern); nil when every encode succeeded.
func (t *Tokenizer) Err() error {
	if e := t.gaveUp.Load(); e != nil {
		return e
	}
	return nil
}

// workspace is the scratch memory of one Encode call; pooled per Tokenizer.
type workspace struct {
	splits, normSplits []tokenMatch
	pieces, next       []piece
	spans              []span
	segments           []segment
	symbols            []symbol
	heap               mergeHeap
	lattice            []latticeNode
	buf                []byte
	lossy              []byte // decodeByteLevel's repaired text
	ids                []int32
}

// assignAddedIDs gives added tokens the ids Hugging Face gives them when it
// loads a tokenizer.json, where the ids written in the file are not read
// back: a token already in the vocabulary takes that id, each new one the
// next id after the vocabulary (or after the highest added id, once that is
// beyond it), and a repeated content is ignored.
func assignAddedIDs(tokens []addedToken, lookup func(string) (int32, bool), vocabSize int) []addedToken {
	seen := map[string]bool{}
	maxID := int32(-1)
	out := make([]addedToken, 0, len(tokens))
	for _, at := range tokens {
		if at.Content == "" || seen[at.Content] {
			continue
		}
		seen[at.Content] = true
		if id, ok := lookup(at.Content); ok {
			at.ID = id
		} else if maxID < 0 || (maxID < int32(vocabSize) && vocabSize > 0) {
			at.ID = int32(vocabSize)
		} else {
			at.ID = maxID + 1
		}
		maxID = max(maxID, at.ID)
		out = append(out, at)
	}
	return out
}

// setAddedTokens registers the added tokens with their final ids.
func (t *Tokenizer) setAddedTokens(tokens []addedToken) error {
	t.added = tokens
	t.addedIDs = make([]int32, len(tokens))
	raw := make([]string, len(tokens))
	normalized := make([]string, len(tokens))
	for i, at := range tokens {
		id := at.ID
		if id < 0 || id > maxTokenID {
			return fmt.Errorf("added token %q has id %d, outside [0, %d]", at.Content, id, maxTokenID)
		}
		t.addedIDs[i] = id
		t.setToken(id, at.Content)
		raw[i] = at.Content
		normalized[i] = at.Content
		if at.Normalized && t.normalizer != nil {
			normalized[i] = t.normalizer.normalize(at.Content)
		}
	}
	t.rawTrie = newTokenTrie(raw, func(i int) bool { return !tokens[i].Normalized })
	t.normTrie = newTokenTrie(normalized, func(i int) bool { return tokens[i].Normalized })
	return nil
}

// finish derives the lookup tables once every component is loaded.
func (t *Tokenizer) finish() {
	t.special = make([]bool, t.tokens.len())
	specialContent := map[string]bool{}
	// Only tokens whose length and first byte a special content has are
	// looked up in it.
	var firsts [256]bool
	var lengths []bool
	for i, at := range t.added {
		if at.Special {
			specialContent[at.Content] = true
			t.special[t.addedIDs[i]] = true
			firsts[at.Content[0]] = true
			if len(at.Content) >= len(lengths) {
				lengths = append(lengths, make([]bool, len(at.Content)+1-len(lengths))...)
			}
			lengths[len(at.Content)] = true
		}
	}
	// Decoding skips by content, so a vocabulary entry spelled like a
	// special token is skipped too.
	if len(specialContent) > 0 {
		for id := range int32(t.tokens.len()) {
			tok := t.tokens.at(id)
			if tok != "" && len(tok) < len(lengths) && lengths[len(tok)] && firsts[tok[0]] && t.known[id] && specialContent[tok] {
				t.special[id] = true
			}
		}
	}
	for i, at := range t.added {
		if at.Special {
			t.addedSpecialIDs = append(t.addedSpecialIDs, t.addedIDs[i])
		}
	}
	slices.Sort(t.addedSpecialIDs)
	t.addedSpecialIDs = slices.Compact(t.addedSpecialIDs)
	t.specialIDs = t.addedSpecialIDs
	if _, ok := t.dec.(byteLevelDecoder); ok {
		from := int32(0)
		// A byte-level model has its vocabulary's bytes already.
		if m, ok := t.model.(*bpe); ok && m.spelled && t.tokens.over == nil && m.vocab.size() == t.tokens.base.size() {
			t.byteLevel = strTable{text: m.vocab.text, offs: m.vocab.offs}
			from = int32(m.vocab.size())
		}
		var text []byte
		offs := []uint32{0}
		for id := from; id < int32(t.tokens.len()); id++ {
			text, _ = byteLevelDecode(text, t.tokens.at(id))
			offs = append(offs, uint32(len(text)))
		}
		if from == 0 {
			t.byteLevel = strTable{text: string(text), offs: offs}
		} else {
			t.byteTail = strTable{text: string(text), offs: offs}
		}
	}
	if t.chunkable() {
		t.chunks = newCache(chunkShardEntries)
	}
	t.pool.New = func() any { return new(workspace) }
}

// Encode appends the ids of text to dst, with the post-processor's special
// tokens (BOS, CLS/SEP, ...) when addSpecial is true. Added tokens are
// recognised in the text whether special or not, as Hugging Face does.
//
// A split pattern that gives up on text (a *PatternError: it backtracked
// past its bound) appends nothing and is kept for Err: the interface
// datasets use has no error return, so a caller checks Err after the
// texts it encoded.
func (t *Tokenizer) Encode(dst []int32, text string, addSpecial bool) (ids []int32) {
	ws := t.pool.Get().(*workspace)
	start := len(dst)
	defer func() {
		if r := recover(); r != nil {
			gaveUp, ok := r.(*PatternError)
			if !ok {
				panic(r)
			}
			t.gaveUp.CompareAndSwap(nil, gaveUp)
			ids = dst[:start] // ws is left mid-encode: not pooled again
			return
		}
		t.pool.Put(ws)
	}()
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	dst = t.encodeText(dst, text, ws)
	if addSpecial && t.post != nil {
		ws.ids = append(ws.ids[:0], dst[start:]...)
		dst = t.post.wrap(dst[:start], ws.ids)
	}
	return dst
}

func (t *Tokenizer) encodeText(dst []int32, text string, ws *workspace) []int32 {
	if t.chunks != nil && len(text) >= chunkMinText {
		return t.encodeChunks(dst, text, ws)
	}
	return t.encodeWhole(dst, text, ws)
}

// encodeWhole encodes text in one go.
func (t *Tokenizer) encodeWhole(dst []int32, text string, ws *workspace) []int32 {
	if t.rawTrie == nil {
		return t.encodeSegment(dst, text, true, ws)
	}
	ws.splits = t.rawTrie.appendSplits(ws.splits[:0], text, t.added)
	return t.encodeSplits(dst, text, ws.splits, true, t.encodeSegment, ws)
}

// encodeSegment normalizes text between raw added tokens, matches the
// normalized added tokens, and pre-tokenizes and models the rest.
func (t *Tokenizer) encodeSegment(dst []int32, text string, first bool, ws *workspace) []int32 {
	if t.normalizer != nil {
		text = t.normalizer.normalize(text)
	}
	if t.normTrie == nil {
		return t.encodePiece(dst, text, first, ws)
	}
	ws.normSplits = t.normTrie.appendSplits(ws.normSplits[:0], text, t.added)
	return t.encodeSplits(dst, text, ws.normSplits, first, t.encodePiece, ws)
}

// encodeSplits emits the ids of added tokens and hands the text between
// them to encode; first says whether text starts the input.
func (t *Tokenizer) encodeSplits(dst []int32, text string, splits []tokenMatch, first bool,
	encode func([]int32, string, bool, *workspace) []int32, ws *workspace) []int32 {
	for _, s := range splits {
		if s.token >= 0 {
			dst = append(dst, t.addedIDs[s.token])
			continue
		}
		dst = encode(dst, text[s.start:s.end], first && s.start == 0, ws)
	}
	return dst
}

func (t *Tokenizer) encodePiece(dst []int32, text string, first bool, ws *workspace) []int32 {
	if text == "" {
		return dst
	}
	pieces := append(ws.pieces[:0], piece{text, first})
	for _, pt := range t.pre {
		next := ws.next[:0]
		for _, p := range pieces {
			next = pt.appendPieces(next, p, ws)
		}
		ws.pieces, ws.next = next, pieces
		pieces = next
	}
	for _, p := range pieces {
		dst = t.model.tokenize(dst, p.text, ws)
	}
	ws.pieces = pieces
	return dst
}

// Decode turns ids back into text; unknown ids are ignored, and special
// tokens are left out when skipSpecial is true. When the tokenizer_config.json
// beside the file sets clean_up_tokenization_spaces, the text is cleaned up
// as transformers' decode does (" ." becomes ".", and so on).
func (t *Tokenizer) Decode(ids []int32, skipSpecial bool) string {
	if t.tekken {
		return t.decodeTekken(ids, skipSpecial)
	}
	text := t.decode(ids, skipSpecial)
	if t.cleanUpSpaces {
		text = cleanUpSpaces(text)
	}
	return text
}

// CleanUpTokenizationSpaces reports whether Decode cleans up spaces.
func (t *Tokenizer) CleanUpTokenizationSpaces() bool { return t.cleanUpSpaces }

// decode is the tokenizers library's decode.
func (t *Tokenizer) decode(ids []int32, skipSpecial bool) string {
	if t.byteLevel.offs != nil {
		return t.decodeByteLevel(ids, skipSpecial)
	}
	tokens := make([]string, 0, len(ids))
	for _, id := range ids {
		if !t.has(id) || (skipSpecial && t.special[id]) {
			continue
		}
		tokens = append(tokens, t.tokens.at(id))
	}
	if t.dec == nil {
		return strings.Join(tokens, " ")
	}
	return strings.Join(t.dec.decodeChain(tokens), "")
}

// decodeByteLevel concatenates the ids' bytes in pooled scratch memory,
// repairs invalid UTF-8 as Rust's from_utf8_lossy does, and copies the
// result out once: the only fresh memory is the text returned.
func (t *Tokenizer) decodeByteLevel(ids []int32, skipSpecial bool) string {
	ws := t.pool.Get().(*workspace)
	defer t.pool.Put(ws)
	ws.buf = t.appendByteLevel(ws.buf[:0], ids, skipSpecial)
	if utf8.Valid(ws.buf) {
		return string(ws.buf)
	}
	ws.lossy = appendLossyUTF8(ws.lossy[:0], ws.buf)
	return string(ws.lossy)
}

// appendByteLevel appends the ids' bytes to buf, as they are (not yet
// repaired). Tokens of up to 8 bytes are copied a word at a time: most are
// that short, and a copy call each would cost more.
func (t *Tokenizer) appendByteLevel(buf []byte, ids []int32, skipSpecial bool) []byte {
	nb := int32(t.byteLevel.size())
	for _, id := range ids {
		if !t.has(id) || (skipSpecial && t.special[id]) {
			continue
		}
		tab, k := &t.byteLevel, id
		if id >= nb {
			tab, k = &t.byteTail, id-nb
		}
		text, begin, end := tab.text, tab.offs[k], tab.offs[k+1]
		w := len(buf)
		if size := int(end - begin); size <= 8 && int(begin)+8 <= len(text) && w+8 <= cap(buf) {
			buf = buf[:w+8]
			binary.LittleEndian.PutUint64(buf[w:], le64(text[begin:]))
			buf = buf[:w+size]
		} else {
			buf = append(buf, text[begin:end]...)
		}
	}
	return buf
}

// byteLevelAt is id's bytes, when the decoder is ByteLevel.
func (t *Tokenizer) byteLevelAt(id int32) string {
	if nb := int32(t.byteLevel.size()); id >= nb {
		return t.byteTail.at(id - nb)
	}
	return t.byteLevel.at(id)
}

func (t *Tokenizer) has(id int32) bool { return id >= 0 && int(id) < len(t.known) && t.known[id] }

// Trim gives back the memory pages of the tables the tokenizer mapped from
// its binary cache and clears its caches of encoded words: a run calls it
// once its prompts are built, when the tokenizer is seldom used again. The
// pages are read back from the page cache when next needed; nothing else
// changes.
func (t *Tokenizer) Trim() {
	if t.mapped != nil {
		dropPages(t.mapped)
	}
	if m, ok := t.model.(*bpe); ok && m.cache != nil {
		m.cache.clear()
	}
	if t.chunks != nil {
		t.chunks.clear()
	}
}

// VocabSize is Hugging Face's vocab_size: the model's vocabulary, added
// tokens not counted.
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// NumSpecialTokensToAdd is how many ids Encode adds to one sequence when
// addSpecial is true.
func (t *Tokenizer) NumSpecialTokensToAdd() int {
	if t.post == nil {
		return 0
	}
	return t.post.added()
}

// AllSpecialIDs lists the ids of the special tokens, ascending: those a
// tokenizer_config.json beside the file names (as transformers'
// all_special_ids), else every added token flagged special. The caller must
// not modify the slice.
func (t *Tokenizer) AllSpecialIDs() []int32 { return t.specialIDs }

// SpecialAddedIDs lists the ids of the added tokens flagged special,
// ascending, whatever tokenizer_config.json says (the random-mm dataset
// prohibits exactly these). The caller must not modify the slice.
func (t *Tokenizer) SpecialAddedIDs() []int32 { return t.addedSpecialIDs }

// TokenToID returns the id of a token as written in the vocabulary (added
// tokens first).
func (t *Tokenizer) TokenToID(token string) (int32, bool) { return t.tokenID(token) }

// IDToToken returns the vocabulary entry of id, as written in the file.
func (t *Tokenizer) IDToToken(id int32) (string, bool) {
	if !t.has(id) {
		return "", false
	}
	return t.tokens.at(id), true
}

// EncodeBatch encodes texts in parallel on GOMAXPROCS goroutines; the
// result's i-th entry holds texts[i]'s ids.
func (t *Tokenizer) EncodeBatch(texts []string, addSpecial bool) [][]int32 {
	out := make([][]int32, len(texts))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(texts)) {
		wg.Go(func() {
			for k := int(next.Add(1) - 1); k < len(texts); k = int(next.Add(1) - 1) {
				out[k] = slices.Clip(t.Encode(nil, texts[k], addSpecial))
			}
		})
	}
	wg.Wait()
	return out
}
