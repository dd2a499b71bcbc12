package tokenizer

import (
	"slices"
	"unicode/utf8"
)

// model turns one pre-tokenized piece into ids.
type model interface {
	tokenize(dst []int32, piece string, ws *workspace) []int32
}

// mergeRule is what a pair of adjacent symbols becomes: the merged token
// and the rule's rank (its line in the merges list; lower merges first).
type mergeRule struct {
	rank  int32
	newID int32
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// bpe is Hugging Face's BPE model. In byteMode the pre-tokenizer chain ends
// in ByteLevel and the vocabulary is keyed by the raw bytes each token
// stands for, so pieces are merged straight from the text's bytes instead of
// being mapped to the byte-level alphabet first; the result is identical.
type bpe struct {
	vocab    strTable // the ids of tokens (in byteMode, of their bytes)
	merges   mergeTable
	byteMode bool
	// outside holds, in byteMode, the tokens with runes outside the byte
	// alphabet, which vocab leaves out (see writtenID).
	outside map[string]int32
	// spelled: vocab's text is each id's token as written, byte-level
	// decoded, so decoding can use it as it is.
	spelled      bool
	byteIDs      [256]int32 // byteMode: the id of each single byte, or -1
	fallbackIDs  [256]int32 // byte_fallback: the id of "<0xXX>", or -1
	byteFallback bool
	unk          int32 // -1 without an unk_token
	fuseUnk      bool
	prefix       string // continuing_subword_prefix
	suffix       string // end_of_word_suffix
	ignoreMerges bool
	cache        *wordCache
}

// symbol is one node of the doubly linked list a word is merged on.
type symbol struct {
	id         int32
	prev, next int32 // indices, -1 at the ends
	size       int32 // bytes of the word it covers; 0 once merged away
	rank       int32 // rank of the merge with next, or noMerge
	newID      int32
}

const noMerge = int32(1<<31 - 1)

// heapThreshold is the symbol count above which merging uses a priority
// queue; below it a linear scan for the lowest rank is faster.
const heapThreshold = 64

func (m *bpe) tokenize(dst []int32, word string, ws *workspace) []int32 {
	if word == "" {
		return dst
	}
	if m.ignoreMerges {
		if id, ok := m.vocab.lookup(word); ok {
			return append(dst, id)
		}
	}
	cacheable := m.cache != nil && len(word) > 1 && len(word) <= cacheMaxWordBytes
	if cacheable {
		if out, ok := m.cache.get(dst, word); ok {
			return out
		}
	}
	syms := m.initialSymbols(ws.symbols[:0], word, ws)
	ws.symbols = syms
	if len(syms) == 0 {
		return dst
	}
	m.merge(syms, ws)
	start := len(dst)
	if len(syms) > heapThreshold {
		n := 0
		for i := int32(0); i >= 0; i = syms[i].next {
			n++
		}
		dst = slices.Grow(dst, n)
	}
	for i := int32(0); i >= 0; i = syms[i].next {
		dst = append(dst, syms[i].id)
	}
	if cacheable {
		m.cache.put(word, dst[start:])
	}
	return dst
}

// initialSymbols splits word into characters (bytes in byteMode), looking
// each up in the vocabulary with byte fallback and unk handling as Hugging
// Face's BPE::merge_word does. A character with neither is dropped.
func (m *bpe) initialSymbols(syms []symbol, word string, ws *workspace) []symbol {
	if cap(syms) < len(word) && len(word) > heapThreshold {
		// A word has at most one symbol a byte: size the list once rather
		// than let appends double it, which a word of megabytes feels.
		syms = make([]symbol, 0, len(word))
	}
	add := func(id int32, size int) {
		n := int32(len(syms))
		syms = append(syms, symbol{id: id, prev: n - 1, next: -1, size: int32(size)})
		if n > 0 {
			syms[n-1].next = n
		}
	}
	unkID, unkSize := int32(-1), 0
	flushUnk := func() {
		if unkID >= 0 {
			add(unkID, unkSize)
			unkID = -1
		}
	}
	for i := 0; i < len(word); {
		n := 1
		if !m.byteMode && word[i] >= utf8.RuneSelf {
			_, n = utf8.DecodeRuneInString(word[i:])
		}
		id := m.lookupChar(word, i, n, ws)
		if id >= 0 {
			flushUnk()
			add(id, n)
			i += n
			continue
		}
		if m.byteFallback && m.hasFallback(word[i:i+n]) {
			flushUnk()
			for k := i; k < i+n; k++ {
				add(m.fallbackIDs[word[k]], 1)
			}
			i += n
			continue
		}
		if m.unk >= 0 {
			if unkID >= 0 && m.fuseUnk {
				unkSize += n
			} else {
				flushUnk()
				unkID, unkSize = m.unk, n
			}
		}
		i += n
	}
	flushUnk()
	return syms
}

// lookupChar finds the id of word[i:i+n] with the subword prefix (if not
// first) and word suffix (if last) attached, or -1.
func (m *bpe) lookupChar(word string, i, n int, ws *workspace) int32 {
	if m.byteMode && m.prefix == "" && m.suffix == "" {
		return m.byteIDs[word[i]]
	}
	pre, suf := "", ""
	if i > 0 {
		pre = m.prefix
	}
	if i+n == len(word) {
		suf = m.suffix
	}
	var id int32
	var ok bool
	if pre == "" && suf == "" {
		id, ok = m.vocab.lookup(word[i : i+n])
	} else {
		b := append(append(append(ws.buf[:0], pre...), word[i:i+n]...), suf...)
		ws.buf = b
		id, ok = m.vocab.lookupBytes(b)
	}
	if !ok {
		return -1
	}
	return id
}

// writtenID finds a token as written in the vocabulary.
func (m *bpe) writtenID(tok string) (int32, bool) {
	if !m.byteMode {
		return m.vocab.lookup(tok)
	}
	var buf [64]byte
	if raw, ok := byteLevelDecode(buf[:0], tok); ok {
		return m.vocab.lookupBytes(raw)
	}
	id, ok := m.outside[tok]
	return id, ok
}

func (m *bpe) hasFallback(s string) bool {
	for k := 0; k < len(s); k++ {
		if m.fallbackIDs[s[k]] < 0 {
			return false
		}
	}
	return true
}

func (m *bpe) rule(a, b int32) mergeRule {
	if r, ok := m.merges.get(a, b); ok {
		return r
	}
	return mergeRule{rank: noMerge}
}

// merge applies merge rules until none applies, always taking the
// lowest-ranked adjacent pair and the leftmost among equals, which is the
// order Hugging Face's priority queue produces.
func (m *bpe) merge(syms []symbol, ws *workspace) {
	for i := range syms {
		if syms[i].next >= 0 {
			r := m.rule(syms[i].id, syms[i+1].id)
			syms[i].rank, syms[i].newID = r.rank, r.newID
		} else {
			syms[i].rank = noMerge
		}
	}
	if len(syms) > heapThreshold {
		m.mergeWithHeap(syms, ws)
		return
	}
	m.mergeLinear(syms)
}

// mergeLinear is merge for a short word: a scan for the lowest rank each
// round beats keeping a heap.
func (m *bpe) mergeLinear(syms []symbol) {
	for {
		best := int32(-1)
		bestRank := noMerge
		for i := int32(0); i >= 0; i = syms[i].next {
			if syms[i].rank < bestRank {
				best, bestRank = i, syms[i].rank
			}
		}
		if best < 0 {
			return
		}
		m.mergeAt(syms, best)
	}
}

// mergeAt merges symbol i with its next and refreshes the two pairs that
// changed: (prev, i) and (i, next).
func (m *bpe) mergeAt(syms []symbol, i int32) {
	s := &syms[i]
	right := s.next
	s.id = s.newID
	s.size += syms[right].size
	syms[right].size = 0
	s.next = syms[right].next
	if s.next >= 0 {
		syms[s.next].prev = i
		r := m.rule(s.id, syms[s.next].id)
		s.rank, s.newID = r.rank, r.newID
	} else {
		s.rank = noMerge
	}
	if p := s.prev; p >= 0 {
		r := m.rule(syms[p].id, s.id)
		syms[p].rank, syms[p].newID = r.rank, r.newID
	}
}

// mergeHeap is the candidate merges of a long word: a binary min-heap of
// symbol positions ordered by the rank of each symbol's merge with its
// next, then by position, holding each symbol at most once (slot[pos] is
// its index in heap, -1 when absent). A symbol whose pair changes is taken
// out and put back rather than pushed again, so the heap never holds stale entries
// and costs 8 bytes a symbol however many merges run: a word of n bytes
// takes n symbols (24 bytes each) and this, where a queue of pushes grew to
// about three 12-byte entries a symbol. (container/heap would box every
// entry.)
type mergeHeap struct {
	heap []int32
	slot []int32
	syms []symbol
}

func (h *mergeHeap) less(a, b int32) bool {
	ra, rb := h.syms[a].rank, h.syms[b].rank
	return ra < rb || (ra == rb && a < b)
}

func (h *mergeHeap) swap(i, j int) {
	h.heap[i], h.heap[j] = h.heap[j], h.heap[i]
	h.slot[h.heap[i]], h.slot[h.heap[j]] = int32(i), int32(j)
}

func (h *mergeHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(h.heap[i], h.heap[parent]) {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}

func (h *mergeHeap) down(i int) {
	for {
		least := i
		if l := 2*i + 1; l < len(h.heap) && h.less(h.heap[l], h.heap[least]) {
			least = l
		}
		if r := 2*i + 2; r < len(h.heap) && h.less(h.heap[r], h.heap[least]) {
			least = r
		}
		if least == i {
			return
		}
		h.swap(i, least)
		i = least
	}
}

// reset fills the heap with every symbol that can merge with its next.
func (h *mergeHeap) reset(syms []symbol) {
	h.syms = syms
	h.heap = h.heap[:0]
	if cap(h.slot) < len(syms) {
		h.slot = make([]int32, len(syms))
		h.heap = make([]int32, 0, len(syms))
	}
	h.slot = h.slot[:len(syms)]
	for i := range syms {
		h.slot[i] = -1
		if syms[i].rank != noMerge {
			h.slot[i] = int32(len(h.heap))
			h.heap = append(h.heap, int32(i))
		}
	}
	for i := len(h.heap)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// remove takes pos out of the heap, if it is there.
func (h *mergeHeap) remove(pos int32) {
	i := int(h.slot[pos])
	if i < 0 {
		return
	}
	last := len(h.heap) - 1
	if i != last {
		h.swap(i, last)
	}
	h.heap = h.heap[:last]
	h.slot[pos] = -1
	if i != last {
		h.down(i)
		h.up(i)
	}
}

// insert adds pos when it can merge with its next.
func (h *mergeHeap) insert(pos int32) {
	if h.syms[pos].rank == noMerge {
		return
	}
	h.slot[pos] = int32(len(h.heap))
	h.heap = append(h.heap, pos)
	h.up(len(h.heap) - 1)
}

func (m *bpe) mergeWithHeap(syms []symbol, ws *workspace) {
	h := &ws.heap
	h.reset(syms)
	for len(h.heap) > 0 {
		// A merge changes the pairs of i and of its prev and ends
		// right's: all three leave the heap while their ranks still order
		// it, and the two that remain come back with their new ranks.
		i := h.heap[0]
		right, prev := syms[i].next, syms[i].prev
		h.remove(i)
		h.remove(right)
		if prev >= 0 {
			h.remove(prev)
		}
		m.mergeAt(syms, i)
		h.insert(i)
		if prev >= 0 {
			h.insert(prev)
		}
	}
	h.syms = nil
}
