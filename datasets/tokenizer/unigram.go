package tokenizer

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// unigram is Hugging Face's Unigram model (SentencePiece's unigram
// language model, as T5, XLM-RoBERTa and many embedding and rerank models
// use it): a piece is cut where the sum of its tokens' log-probabilities is
// highest (Viterbi over every vocabulary entry that starts at each
// character), a character no entry covers becomes unk at the lowest score
// less 10, runs of unk are fused into one token, and with byte_fallback a
// fused run absent from the vocabulary is spelled as "<0xXX>" tokens.
type unigram struct {
	pieces       *tokenTrie // vocabulary entries; a node's token is an id
	scores       []float64  // by id
	unk          int32      // -1 without unk_id
	unkScore     float64
	byteFallback bool
	fallbackIDs  [256]int32 // the id of "<0xXX>", or -1
	cache        *wordCache
}

// unkPenalty is how far below the lowest vocabulary score an unknown
// character scores (SentencePiece's kUnkPenalty).
const unkPenalty = 10.0

// latticeNode is the best path found so far that ends at one byte offset
// of the piece: its score, where its last token starts, and that token.
type latticeNode struct {
	score float64
	start int32 // -1: no path ends here yet
	id    int32 // -1: a dropped character (no unk_id)
}

// vocabEntry is one line of a Unigram vocabulary: [token, score].
type vocabEntry struct {
	token string
	score float64
}

func newUnigram(entries []vocabEntry, unk int32, byteFallback bool) (*unigram, error) {
	if unk >= 0 && int(unk) >= len(entries) {
		return nil, fmt.Errorf("the Unigram unk_id %d is outside the vocabulary of %d entries", unk, len(entries))
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("the Unigram vocabulary is empty")
	}
	m := &unigram{
		scores:       make([]float64, len(entries)),
		unk:          unk,
		byteFallback: byteFallback,
		cache:        newWordCache(),
	}
	minScore := entries[0].score
	for id, e := range entries {
		m.scores[id] = e.score
		minScore = min(minScore, e.score)
	}
	m.unkScore = minScore - unkPenalty
	m.pieces = newIDTrie(entries)
	for b := range 256 {
		m.fallbackIDs[b] = -1
		if id, ok := m.lookup(fmt.Sprintf("<0x%02X>", b)); ok {
			m.fallbackIDs[b] = id
		}
	}
	return m, nil
}

// newIDTrie builds the trie of the vocabulary's tokens, each node holding
// its token's id (the last, for a token listed twice, as Hugging Face's
// token-to-id map has it). It sorts the tokens and builds the nodes depth
// first from runs sharing a prefix, so a 250k vocabulary needs no map at
// all, and sizes the tables exactly from the sorted keys' common prefixes;
// edges come out sorted, as tokenTrie.child expects.
func newIDTrie(entries []vocabEntry) *tokenTrie {
	type key struct {
		tok string
		id  int32
	}
	sorted := make([]key, 0, len(entries))
	for id, e := range entries {
		if e.token != "" {
			sorted = append(sorted, key{e.token, int32(id)})
		}
	}
	slices.SortFunc(sorted, func(a, b key) int {
		if c := strings.Compare(a.tok, b.tok); c != 0 {
			return c
		}
		return int(a.id - b.id)
	})
	keys := make([]string, 0, len(sorted))
	ids := make([]int32, 0, len(sorted))
	for i, k := range sorted {
		if i+1 < len(sorted) && sorted[i+1].tok == k.tok {
			continue // the later id wins
		}
		keys = append(keys, k.tok)
		ids = append(ids, k.id)
	}
	nodes := 1
	for i, k := range keys {
		shared := 0
		if i > 0 {
			prev := keys[i-1]
			for shared < len(prev) && shared < len(k) && prev[shared] == k[shared] {
				shared++
			}
		}
		nodes += len(k) - shared
	}
	t := &tokenTrie{nodes: make([]trieNode, 1, nodes), edges: make([]trieEdge, 0, nodes-1)}
	t.nodes[0].token = -1
	// runs is a stack of the runs of keys below each node being built: a
	// node pushes its children's runs, builds each, and pops them.
	type run struct {
		lo, hi int
		node   int32
	}
	var runs []run
	// build fills node n with the children of keys[lo:hi], which share
	// their first depth bytes; keys[lo] may end at depth.
	var build func(n int32, lo, hi, depth int)
	build = func(n int32, lo, hi, depth int) {
		if lo < hi && len(keys[lo]) == depth {
			t.nodes[n].token = ids[lo]
			lo++
		}
		base := len(runs)
		t.nodes[n].edgeStart = int32(len(t.edges))
		for i := lo; i < hi; {
			b := keys[i][depth]
			j := i + 1
			for j < hi && keys[j][depth] == b {
				j++
			}
			child := int32(len(t.nodes))
			t.nodes = append(t.nodes, trieNode{token: -1})
			t.edges = append(t.edges, trieEdge{b, child})
			runs = append(runs, run{i, j, child})
			i = j
		}
		t.nodes[n].edgeLength = int32(len(runs) - base)
		for k := base; k < len(runs); k++ {
			r := runs[k]
			build(r.node, r.lo, r.hi, depth+1)
		}
		runs = runs[:base]
	}
	build(0, 0, len(keys), 0)
	for _, e := range t.edges[t.nodes[0].edgeStart : t.nodes[0].edgeStart+t.nodes[0].edgeLength] {
		t.root[e.b] = e.node
	}
	return t
}

func (m *unigram) tokenize(dst []int32, piece string, ws *workspace) []int32 {
	if piece == "" {
		return dst
	}
	cacheable := len(piece) <= cacheMaxWordBytes
	if cacheable {
		if out, ok := m.cache.get(dst, piece); ok {
			return out
		}
	}
	start := len(dst)
	dst = m.viterbi(dst, piece, ws)
	if cacheable {
		m.cache.put(piece, dst[start:])
	}
	return dst
}

// viterbi appends the ids of the best segmentation of piece.
func (m *unigram) viterbi(dst []int32, piece string, ws *workspace) []int32 {
	n := len(piece)
	best := slices.Grow(ws.lattice[:0], n+1)[:n+1]
	ws.lattice = best
	for i := range best {
		best[i] = latticeNode{start: -1}
	}
	best[0].start = 0
	for pos := 0; pos < n; {
		base := best[pos].score
		charLen := 1
		if c := piece[pos]; c >= utf8.RuneSelf {
			_, charLen = utf8.DecodeRuneInString(piece[pos:])
		}
		single := false
		node := m.pieces.root[piece[pos]]
		for k := pos + 1; node != 0; k++ {
			if id := m.pieces.nodes[node].token; id >= 0 {
				if cand := base + m.scores[id]; best[k].start < 0 || cand > best[k].score {
					best[k] = latticeNode{score: cand, start: int32(pos), id: id}
				}
				if k-pos == charLen {
					single = true
				}
			}
			if k >= n {
				break
			}
			node = m.pieces.child(node, piece[k])
		}
		if !single {
			// Hugging Face fails the whole encode when there is no unk_id;
			// the character is dropped instead.
			end := pos + charLen
			if cand := base + m.unkScore; best[end].start < 0 || cand > best[end].score {
				best[end] = latticeNode{score: cand, start: int32(pos), id: m.unk}
			}
		}
		pos += charLen
	}
	// Walk back from the end, then reverse what was appended; a run of unk
	// tokens is fused into one stretch of text.
	first := len(dst)
	for end := n; end > 0; {
		nd := best[end]
		start := int(nd.start)
		if nd.id < 0 {
			end = start
			continue
		}
		if nd.id == m.unk {
			for start > 0 && best[start].id == m.unk {
				start = int(best[start].start)
			}
			dst = m.appendUnknown(dst, piece[start:end])
			end = start
			continue
		}
		dst = append(dst, nd.id)
		end = start
	}
	slices.Reverse(dst[first:])
	return dst
}

// appendUnknown appends, reversed (viterbi reverses the whole piece), the
// ids of a fused run of unknown characters: the run's own id if the
// vocabulary has it, else its bytes' "<0xXX>" ids under byte_fallback when
// all exist, else unk.
func (m *unigram) appendUnknown(dst []int32, text string) []int32 {
	if id, ok := m.lookup(text); ok {
		return append(dst, id)
	}
	if m.byteFallback && m.hasFallback(text) {
		for i := len(text) - 1; i >= 0; i-- {
			dst = append(dst, m.fallbackIDs[text[i]])
		}
		return dst
	}
	return append(dst, m.unk)
}

// lookup returns the id of a vocabulary token.
func (m *unigram) lookup(token string) (int32, bool) {
	if token == "" {
		return 0, false
	}
	node := m.pieces.root[token[0]]
	for i := 1; node != 0 && i < len(token); i++ {
		node = m.pieces.child(node, token[i])
	}
	if node == 0 || m.pieces.nodes[node].token < 0 {
		return 0, false
	}
	return m.pieces.nodes[node].token, true
}

func (m *unigram) hasFallback(s string) bool {
	for i := 0; i < len(s); i++ {
		if m.fallbackIDs[s[i]] < 0 {
			return false
		}
	}
	return true
}

// parseUnigram builds the model from tokenizer.json's fields: vocab (a list
// of [token, score]), unk_id and byte_fallback.
func (t *Tokenizer) parseUnigram(mf *modelFields) error {
	o := mf.fields
	var unk *int64
	byteFallback := false
	if err := o.field("unk_id", &unk); err != nil {
		return err
	}
	if err := o.field("byte_fallback", &byteFallback); err != nil {
		return err
	}
	unkID := int32(-1)
	if unk != nil {
		if *unk < 0 || *unk > maxTokenID {
			return fmt.Errorf("the Unigram unk_id %d is not a token id", *unk)
		}
		unkID = int32(*unk)
	}
	if len(mf.entries) > maxTokenID+1 {
		return fmt.Errorf("the Unigram vocabulary has %d entries, more than %d", len(mf.entries), maxTokenID+1)
	}
	m, err := newUnigram(mf.entries, unkID, byteFallback)
	if err != nil {
		return err
	}
	t.vocabSize = len(mf.entries)
	strs := make([]string, len(mf.entries))
	t.known = make([]bool, len(mf.entries))
	for id, e := range mf.entries {
		strs[id], t.known[id] = e.token, true
	}
	t.tokens = tokenList{base: newStrTable(strs)}
	t.model = m
	return nil
}

// readUnigramVocab reads [["token", score], ...]. As readVocab does, the
// list is copied into one string and the tokens without escapes are sliced
// out of it.
func (s *jsonScanner) readUnigramVocab() ([]vocabEntry, error) {
	s.skipSpace()
	base := s.pos
	if _, err := s.skipValue(); err != nil {
		return nil, err
	}
	text := string(s.data[base:s.pos])
	s.pos = base
	entries := make([]vocabEntry, 0, len(text)/24)
	err := s.eachElement(func(i int) error {
		if err := s.expect('['); err != nil {
			return err
		}
		s.skipSpace()
		at := s.pos + 1
		raw, err := s.readStringBytes()
		if err != nil {
			return err
		}
		var token string
		if len(raw) == s.pos-1-at { // no escapes: raw is the text itself
			token = text[at-base : at-base+len(raw)]
		} else {
			token = string(raw)
		}
		if err := s.expect(','); err != nil {
			return err
		}
		s.skipSpace()
		numStart := s.pos
		s.skipNumber()
		score, err := strconv.ParseFloat(text[numStart-base:s.pos-base], 64)
		if err != nil {
			return fmt.Errorf("vocab entry %d (%q): %w", i, token, err)
		}
		if err := s.expect(']'); err != nil {
			return err
		}
		entries = append(entries, vocabEntry{token, score})
		return nil
	})
	return entries, err
}

// skipNumber steps over the characters of a JSON number.
func (s *jsonScanner) skipNumber() {
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		if (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
			return
		}
		s.pos++
	}
}
