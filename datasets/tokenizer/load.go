package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// object is a JSON object whose fields are decoded on demand, which suits
// tokenizer.json's tagged unions ({"type": "Split", ...}).
type object map[string]json.RawMessage

func decodeObject(raw json.RawMessage) (object, error) {
	var o object
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, err
	}
	return o, nil
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// field decodes o[key] into v, leaving v alone when the key is absent or
// null.
func (o object) field(key string, v any) error {
	raw, ok := o[key]
	if !ok || isNull(raw) {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("field %q: %w", key, err)
	}
	return nil
}

// parseList decodes o[key], a list of components, with parse.
func parseList[T any](o object, key string, parse func(json.RawMessage) (T, error)) ([]T, error) {
	var raws []json.RawMessage
	if err := o.field(key, &raws); err != nil {
		return nil, err
	}
	list := make([]T, 0, len(raws))
	for _, raw := range raws {
		item, err := parse(raw)
		if err != nil {
			return nil, err
		}
		list = append(list, item)
	}
	return list, nil
}

func (o object) typeName() string {
	var t string
	_ = o.field("type", &t)
	return t
}

// fileFormat is the top level of tokenizer.json; the model is read by
// jsonScanner, everything else by encoding/json.
type fileFormat struct {
	AddedTokens   []addedToken
	Normalizer    json.RawMessage
	PreTokenizer  json.RawMessage
	Model         modelFields
	PostProcessor json.RawMessage
	Decoder       json.RawMessage
}

// modelFields is the model object: its small fields raw, its vocabulary
// decoded, and its merges kept raw until the vocabulary is known.
type modelFields struct {
	fields   object
	vocab    strTable // a BPE or WordPiece model's tokens, indexed
	known    []bool   // the ids vocab has a token for
	hasVocab bool
	entries  []vocabEntry // a Unigram model's vocab list
	merges   []byte
	// cached, when set, holds the vocabulary and merge tables from the
	// binary cache (bincache.go): the JSON's are skipped, not read.
	cached  *flatModel
	skipped bool         // the JSON's vocabulary object was skipped for cached
	spans   [2][2]uint32 // where the vocab and merges values lie
	// resolve asks parseBPE to keep what the cache would hold in resolved.
	resolve  bool
	resolved *flatModel
}

// loadJSON reads a Hugging Face tokenizer.json file.
// A BPE model's vocabulary and resolved merges come from the binary cache
// when it holds this file's, and go there when it does not.
func loadJSON(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sum := fileSum(data)
	t, err := loadJSONData(path, data, sum)
	if t != nil {
		t.fileSum = sum
	}
	return t, err
}

// loadJSONData is loadJSON of the file's bytes, whose SHA-256 is sum.
func loadJSONData(path string, data []byte, sum [32]byte) (*Tokenizer, error) {
	dir := binCacheDir()
	if dir == "" {
		t, _, err := parseJSONWith(data, nil, false)
		if err != nil {
			return nil, fmt.Errorf("tokenizer %s: %w", path, err)
		}
		return t, nil
	}
	if cached := readBinCache(dir, sum); cached != nil {
		if t, _, err := parseJSONWith(data, cached, false); err == nil {
			return t, nil
		}
		// A cache that does not fit the file is ignored.
		unmapFile(cached.mapped)
	}
	t, resolved, err := parseJSONWith(data, nil, true)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	if resolved != nil && writeBinCache(dir, sum, resolved) == nil {
		// Load again from the file just written: its tables mapped, the
		// heap ones go, and the process looks as every later one will.
		if cached := readBinCache(dir, sum); cached != nil {
			if t2, _, err := parseJSONWith(data, cached, false); err == nil {
				return t2, nil
			}
			unmapFile(cached.mapped)
		}
	}
	return t, nil
}

func readFile(data []byte, cached *flatModel) (*fileFormat, error) {
	f := &fileFormat{}
	f.Model.cached = cached
	s := &jsonScanner{data: data}
	sawModel := false
	err := s.eachField(func(key string) error {
		var dst *json.RawMessage
		switch key {
		case "model":
			sawModel = true
			return s.readModel(&f.Model)
		case "added_tokens":
			raw, err := s.skipValue()
			if err != nil {
				return err
			}
			if isNull(raw) {
				return nil
			}
			if err := json.Unmarshal(raw, &f.AddedTokens); err != nil {
				return fmt.Errorf("added_tokens: %w", err)
			}
			return nil
		case "normalizer":
			dst = &f.Normalizer
		case "pre_tokenizer":
			dst = &f.PreTokenizer
		case "post_processor":
			dst = &f.PostProcessor
		case "decoder":
			dst = &f.Decoder
		default:
			return nil
		}
		raw, err := s.skipValue()
		*dst = raw
		return err
	})
	if err != nil {
		return nil, err
	}
	if s.peek() != 0 {
		return nil, s.errorf("trailing data after the top-level object")
	}
	if !sawModel {
		return nil, fmt.Errorf("no model")
	}
	return f, nil
}

func (s *jsonScanner) readModel(m *modelFields) error {
	if s.peek() == 'n' {
		return fmt.Errorf("model is null")
	}
	m.fields = object{}
	return s.eachField(func(key string) error {
		var err error
		switch key {
		case "vocab":
			switch s.peek() {
			case '{':
				if m.cached != nil {
					m.skipped = true
					return s.stepOver(m.cached.spans[0])
				}
				start := s.pos
				var arena []byte
				var ends []uint32
				var ids []int32
				if arena, ends, ids, err = s.readVocab(); err != nil {
					return err
				}
				m.spans[0] = [2]uint32{uint32(start), uint32(s.pos)}
				m.vocab, m.known, err = vocabFromEntries(arena, ends, ids)
				m.hasVocab = err == nil
			case '[':
				m.entries, err = s.readUnigramVocab()
			default:
				return fmt.Errorf("model vocab is neither an object of token ids nor a list of [token, score]")
			}
		case "merges":
			if m.cached != nil {
				m.merges = []byte("[]") // not read: the cache has them
				m.fields[key] = m.merges
				return s.stepOver(m.cached.spans[1])
			}
			s.skipSpace()
			start := s.pos
			m.merges, err = s.skipValue()
			m.spans[1] = [2]uint32{uint32(start), uint32(s.pos)}
			m.fields[key] = m.merges
		default:
			m.fields[key], err = s.skipValue()
		}
		return err
	})
}

// stepOver moves past the value at the cursor, which the cache says spans
// span: the file's hash matched the cache's, so its bytes are those the
// span was taken from. A span that does not start at the cursor, or does
// not end a container, is not trusted: the value is skipped as usual.
func (s *jsonScanner) stepOver(span [2]uint32) error {
	s.skipSpace()
	start, end := int(span[0]), int(span[1])
	if start == s.pos && end > start && end <= len(s.data) && (s.data[end-1] == '}' || s.data[end-1] == ']') {
		s.pos = end
		return nil
	}
	_, err := s.skipValue()
	return err
}

// parseJSON builds a Tokenizer from the bytes of a tokenizer.json file.
func parseJSON(data []byte) (*Tokenizer, error) {
	t, _, err := parseJSONWith(data, nil, false)
	return t, err
}

// parseJSONWith is parseJSON taking a BPE model's vocabulary and merges
// from cached, or, with resolve, returning them for the cache.
func parseJSONWith(data []byte, cached *flatModel, resolve bool) (*Tokenizer, *flatModel, error) {
	f, err := readFile(data, cached)
	if err != nil {
		return nil, nil, fmt.Errorf("not a tokenizer.json: %w", err)
	}
	if cached != nil && !f.Model.skipped {
		return nil, nil, fmt.Errorf("the cached model does not fit the file")
	}
	f.Model.resolve = resolve
	t := &Tokenizer{}
	if !isNull(f.Normalizer) {
		if t.normalizer, err = parseNormalizer(f.Normalizer); err != nil {
			return nil, nil, fmt.Errorf("normalizer: %w", err)
		}
	}
	if !isNull(f.PreTokenizer) {
		if t.pre, err = parsePreTokenizer(f.PreTokenizer); err != nil {
			return nil, nil, fmt.Errorf("pre_tokenizer: %w", err)
		}
	}
	// A chain ending in ByteLevel lets the model work on raw bytes.
	byteMode := false
	if n := len(t.pre); n > 0 {
		_, byteMode = t.pre[n-1].(byteLevelPreTokenizer)
		for _, p := range t.pre[:n-1] {
			if _, ok := p.(byteLevelPreTokenizer); ok {
				return nil, nil, fmt.Errorf("pre_tokenizer: ByteLevel is supported only as the last pre-tokenizer")
			}
		}
	}
	if err := t.parseModel(&f.Model, byteMode); err != nil {
		return nil, nil, fmt.Errorf("model: %w", err)
	}
	var lookup func(string) (int32, bool)
	switch m := t.model.(type) {
	case *unigram:
		// A Unigram model keeps no token map; the added tokens are looked
		// up in its trie.
		lookup = m.lookup
	case *bpe:
		lookup = m.writtenID
	case *wordPiece:
		lookup = m.vocab.lookup
	}
	if err := t.setAddedTokens(assignAddedIDs(f.AddedTokens, lookup, t.vocabSize)); err != nil {
		return nil, nil, fmt.Errorf("added_tokens: %w", err)
	}
	if !isNull(f.PostProcessor) {
		if t.post, err = parsePostProcessor(f.PostProcessor); err != nil {
			return nil, nil, fmt.Errorf("post_processor: %w", err)
		}
	}
	if !isNull(f.Decoder) {
		if t.dec, err = parseDecoder(f.Decoder); err != nil {
			return nil, nil, fmt.Errorf("decoder: %w", err)
		}
	}
	t.finish()
	if cached != nil {
		t.mapped = cached.mapped
	}
	return t, f.Model.resolved, nil
}

// pattern decodes a {"String": s} or {"Regex": r} pattern.
func parsePattern(raw json.RawMessage) (matcher, error) {
	var p struct {
		String *string `json:"String"`
		Regex  *string `json:"Regex"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("pattern: %w", err)
	}
	switch {
	case p.String != nil:
		return literalMatcher{*p.String}, nil
	case p.Regex != nil:
		return newMatcher(*p.Regex)
	}
	return nil, fmt.Errorf("pattern %s is neither String nor Regex", raw)
}

// parseModel builds the model from its fields.
func (t *Tokenizer) parseModel(m *modelFields, byteMode bool) error {
	o := m.fields
	typ := o.typeName()
	if typ == "" {
		// Files from before models were tagged: infer from the fields.
		switch {
		case o["merges"] != nil:
			typ = "BPE"
		case o["max_input_chars_per_word"] != nil || o["continuing_subword_prefix"] != nil:
			typ = "WordPiece"
		case m.entries != nil:
			typ = "Unigram"
		}
	}
	if typ == "Unigram" {
		if m.entries == nil {
			return fmt.Errorf("the Unigram model has no vocab list of [token, score]")
		}
		return t.parseUnigram(m)
	}
	if typ != "BPE" && typ != "WordPiece" {
		return fmt.Errorf("model %q is not supported (supported: BPE, WordPiece, Unigram)", typ)
	}
	if m.cached != nil {
		if typ != "BPE" {
			return fmt.Errorf("the cached model is BPE, the file's %s", typ)
		}
		// The tables are the cache's, read-only: known is copied, as added
		// tokens extend it.
		m.vocab, m.known, m.hasVocab = m.cached.tokens, slices.Clone(m.cached.known), true
	}
	if !m.hasVocab {
		return fmt.Errorf("%s model has no vocab", typ)
	}
	t.tokens, t.known = tokenList{base: m.vocab}, m.known
	for _, k := range m.known {
		if k {
			t.vocabSize++
		}
	}
	if typ == "BPE" {
		return t.parseBPE(m, byteMode)
	}
	return t.parseWordPiece(o, m.vocab)
}

// maxTokenID bounds ids so that a corrupt file cannot make the id tables
// huge; the largest real vocabularies are under 300k.
const maxTokenID = 1<<24 - 1

func (t *Tokenizer) setToken(id int32, tok string) {
	t.tokens.set(id, tok)
	if int(id) >= len(t.known) {
		t.known = append(t.known, make([]bool, int(id)+1-len(t.known))...)
	}
	t.known[id] = true
}

func (t *Tokenizer) parseWordPiece(o object, vocab strTable) error {
	m := &wordPiece{vocab: vocab, prefix: "##", maxChars: 100}
	unk := "[UNK]"
	for key, v := range map[string]any{"unk_token": &unk, "continuing_subword_prefix": &m.prefix, "max_input_chars_per_word": &m.maxChars} {
		if err := o.field(key, v); err != nil {
			return err
		}
	}
	id, ok := vocab.lookup(unk)
	if !ok {
		return fmt.Errorf("WordPiece unk_token %q is not in the vocabulary", unk)
	}
	m.unk = id
	t.model = m
	return nil
}

func (t *Tokenizer) parseBPE(mf *modelFields, byteMode bool) error {
	o := mf.fields
	m := &bpe{unk: -1, byteMode: byteMode, cache: newWordCache()}
	var unk string
	var dropout *float64
	for key, v := range map[string]any{"unk_token": &unk, "continuing_subword_prefix": &m.prefix,
		"end_of_word_suffix": &m.suffix, "fuse_unk": &m.fuseUnk, "byte_fallback": &m.byteFallback,
		"ignore_merges": &m.ignoreMerges, "dropout": &dropout} {
		if err := o.field(key, v); err != nil {
			return err
		}
	}
	if dropout != nil && *dropout > 0 {
		return fmt.Errorf("BPE dropout %v makes encoding random; only 0 or null is supported", *dropout)
	}
	if c := mf.cached; c != nil {
		if c.byteMode != byteMode {
			return fmt.Errorf("the cached model does not fit the file")
		}
		m.vocab, m.merges = c.tokens, c.merges
		if byteMode {
			m.vocab, m.outside, m.spelled = c.vocab, c.outsideMap(), true
			// The tokens as written are looked up through vocab.
			t.tokens.base.slots = nil
		}
	} else {
		// The merges and the byte-keyed vocabulary are independent: build
		// them side by side.
		var mergeErr error
		var wg sync.WaitGroup
		wg.Go(func() { m.merges, mergeErr = parseMerges(mf.merges, &mf.vocab, mf.known, m.prefix) })
		m.vocab = mf.vocab
		var outside []uint32
		if byteMode {
			m.vocab, m.outside, outside = byteTable(&mf.vocab, mf.known)
			m.spelled = true
			t.tokens.base.slots = nil
		}
		wg.Wait()
		if mergeErr != nil {
			return mergeErr
		}
		if mf.resolve {
			mf.resolved = &flatModel{spans: mf.spans, byteMode: byteMode, tokens: t.tokens.base,
				known: mf.known[:len(mf.known):len(mf.known)], vocab: m.vocab, outside: outside, merges: m.merges}
		}
	}
	if unk != "" {
		id, ok := m.writtenID(unk)
		if !ok {
			return fmt.Errorf("BPE unk_token %q is not in the vocabulary", unk)
		}
		m.unk = id
	}
	for b := range 256 {
		m.fallbackIDs[b], m.byteIDs[b] = -1, -1
		if id, ok := m.writtenID(fmt.Sprintf("<0x%02X>", b)); ok {
			m.fallbackIDs[b] = id
		}
		if byteMode {
			if id, ok := m.vocab.lookup(string([]byte{byte(b)})); ok {
				m.byteIDs[b] = id
			}
		}
	}
	t.model = m
	return nil
}

// byteTable re-keys a byte-level vocabulary by the bytes each token stands
// for. Tokens with runes outside the byte alphabet can never be produced
// from byte-mapped text, so they are left out of the index (they still
// decode) and returned in outside, by token and by id.
func byteTable(written *strTable, known []bool) (strTable, map[string]int32, []uint32) {
	n := written.size()
	text := make([]byte, 0, len(written.text))
	offs := make([]uint32, 1, n+1)
	in := make([]bool, n)
	count := 0
	var outside map[string]int32
	var outsideIDs []uint32
	for id := range int32(n) {
		var ok bool
		tok := written.at(id)
		text, ok = byteLevelDecode(text, tok)
		offs = append(offs, uint32(len(text)))
		switch {
		case !known[id]:
		case ok:
			in[id] = true
			count++
		default:
			if outside == nil {
				outside = map[string]int32{}
			}
			outside[tok] = id
			outsideIDs = append(outsideIDs, uint32(id))
		}
	}
	v := strTable{text: string(text), offs: offs}
	v.index(count, func(id int32) bool { return in[id] })
	return v, outside, outsideIDs
}

// mergeChunk is how many merges one goroutine resolves at a time.
var mergeChunk = 1 << 14 // a variable for tests

// parseMerges reads the merges list into the merge table. A later duplicate
// of a pair overrides the earlier one, as in Hugging Face. vocab is the
// vocabulary as written, indexed.
//
// Resolving a merge to ids takes hash lookups in a vocabulary larger than
// the caches, which is most of the time of loading: one quick pass finds
// where each chunk of merges starts, the chunks are resolved on all cores,
// and the table is filled with them in rank order as they come in.
func parseMerges(raw []byte, vocab *strTable, known []bool, prefix string) (mergeTable, error) {
	if isNull(raw) {
		return newMergeTable(0), nil
	}
	var starts []int
	s := &jsonScanner{data: raw}
	n := 0
	err := s.eachElement(func(i int) error {
		if i%mergeChunk == 0 {
			s.skipSpace()
			starts = append(starts, s.pos)
		}
		n++
		_, err := s.skipValue()
		return err
	})
	if err != nil {
		return mergeTable{}, fmt.Errorf("merges: %w", err)
	}
	merges := newMergeTable(n)
	type chunk struct {
		rules []resolvedMerge
		err   error
		done  chan struct{}
	}
	chunks := make([]chunk, len(starts))
	for i := range chunks {
		chunks[i].done = make(chan struct{})
	}
	var next atomic.Int32
	for range min(runtime.GOMAXPROCS(0), len(chunks)) {
		go func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(chunks) {
					return
				}
				c := &chunks[i]
				first := i * mergeChunk
				c.rules, c.err = resolveMerges(raw, starts[i], first, min(mergeChunk, n-first), vocab, known, prefix)
				close(c.done)
			}
		}()
	}
	for i := range chunks {
		c := &chunks[i]
		<-c.done
		if c.err != nil {
			// Let the other chunks finish before returning the first error.
			for j := i + 1; j < len(chunks); j++ {
				<-chunks[j].done
			}
			return mergeTable{}, fmt.Errorf("merges: %w", c.err)
		}
		for _, r := range c.rules {
			merges.put(int32(r.key>>32), int32(uint32(r.key)), r.rule)
		}
		c.rules = nil
	}
	return merges, nil
}

// resolvedMerge is a merge as the model's table holds it.
type resolvedMerge struct {
	key  uint64
	rule mergeRule
}

// resolveMerges resolves the count merges from raw[pos:], the first of rank
// first, to ids.
//
// Trained and converted files list merges in the order their results were
// added to the vocabulary, so the merged token is nearly always the previous
// merge's or the next id: checking those two first against tokens saves a
// third of the hash lookups.
func resolveMerges(raw []byte, pos, first, count int, vocab *strTable, known []bool, prefix string) ([]resolvedMerge, error) {
	s := &jsonScanner{data: raw, pos: pos}
	out := make([]resolvedMerge, 0, count)
	var pair [][]byte
	var merged []byte
	last := int32(-1)
	for rank := first; rank < first+count; rank++ {
		if rank > first {
			if err := s.expect(','); err != nil {
				return nil, err
			}
		}
		a, b, err := s.readMerge(rank, &pair)
		if err != nil {
			return nil, err
		}
		aID, okA := vocab.lookupBytes(a)
		bID, okB := vocab.lookupBytes(b)
		if !okA || !okB {
			return nil, fmt.Errorf("merge %d (%q %q) uses a token missing from the vocabulary", rank, a, b)
		}
		b = bytes.TrimPrefix(b, []byte(prefix))
		newID, ok := int32(-1), false
		for _, id := range [2]int32{last, last + 1} {
			if id >= 0 && int(id) < vocab.size() && known[id] && isConcat(vocab.at(id), a, b) {
				newID, ok = id, true
				break
			}
		}
		if !ok {
			merged = append(append(merged[:0], a...), b...)
			if newID, ok = vocab.lookupBytes(merged); !ok {
				return nil, fmt.Errorf("merge %d makes %q, which is missing from the vocabulary", rank, merged)
			}
		}
		last = newID
		out = append(out, resolvedMerge{pairKey(aID, bID), mergeRule{rank: int32(rank), newID: newID}})
	}
	return out, nil
}

// isConcat reports whether tok is a followed by b. A token found so is the
// one the vocabulary maps a+b to: vocab holds each id's own key.
func isConcat(tok string, a, b []byte) bool {
	return len(tok) == len(a)+len(b) && tok[:len(a)] == string(a) && tok[len(a):] == string(b)
}
