package tokenizer

import (
	"fmt"
	"math/bits"
)

// The vocabulary and the merges are flat arrays rather than Go maps: the
// strings end to end in one text, offsets and open-addressing slots in
// integer slices. Nothing in them is a pointer the garbage collector has to
// trace, their layout is the binary cache's (bincache.go), so a cached load
// maps them from the file instead of building them, and they are about half
// the size of the maps they replace.

// strTable holds the strings of ids 0..n-1 end to end and, when slots is
// set, finds a string's id. An id whose string was not indexed (a hole in
// the vocabulary, a token left out of a byte-keyed table) is never found.
type strTable struct {
	text  string   // the strings end to end, in id order
	offs  []uint32 // id's string is text[offs[id]:offs[id+1]]
	slots []uint64 // hash<<32 | id+1 by open addressing; 0 is empty
}

// size is the number of ids the table spans.
func (v *strTable) size() int { return max(len(v.offs)-1, 0) }

func (v *strTable) at(id int32) string { return v.text[v.offs[id]:v.offs[id+1]] }

// lookup returns the id of key, if it was indexed.
func (v *strTable) lookup(key string) (int32, bool) { return lookupKey(v, key) }

// lookupBytes is lookup for bytes, without copying them.
func (v *strTable) lookupBytes(key []byte) (int32, bool) { return lookupKey(v, key) }

func lookupKey[K string | []byte](v *strTable, key K) (int32, bool) {
	if len(v.slots) == 0 {
		return -1, false
	}
	h := strHash(key)
	tag := h >> 32
	mask := uint64(len(v.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := v.slots[i]
		if s == 0 {
			return -1, false
		}
		if s>>32 == tag {
			id := int32(uint32(s)) - 1
			if v.text[v.offs[id]:v.offs[id+1]] == string(key) {
				return id, true
			}
		}
	}
}

// index builds the slots over the ids for which use is true. A string
// indexed twice keeps the later id; the earlier one is returned in
// replaced, in order.
func (v *strTable) index(count int, use func(id int32) bool) (replaced []int32) {
	v.slots = make([]uint64, slotCount(count, 4, 3))
	mask := uint64(len(v.slots) - 1)
	for id := range int32(v.size()) {
		if !use(id) {
			continue
		}
		key := v.at(id)
		h := strHash(key)
		i := h & mask
		for ; v.slots[i] != 0; i = (i + 1) & mask {
			s := v.slots[i]
			if old := int32(uint32(s)) - 1; s>>32 == h>>32 && v.at(old) == key {
				replaced = append(replaced, old)
				break
			}
		}
		v.slots[i] = h&^(1<<32-1) | uint64(id+1)
	}
	return replaced
}

// slotCount is the power of two (at least 8) that keeps n entries at most
// den/num full.
func slotCount(n, num, den int) int {
	want := max(n*num/den+1, 8)
	return 1 << bits.Len(uint(want-1))
}

// newStrTable lays out strs (id -> string; "" with known false is a hole)
// end to end, without slots.
func newStrTable(strs []string) strTable {
	n := 0
	for _, s := range strs {
		n += len(s)
	}
	text := make([]byte, 0, n)
	offs := make([]uint32, 1, len(strs)+1)
	for _, s := range strs {
		text = append(text, s...)
		offs = append(offs, uint32(len(text)))
	}
	return strTable{text: string(text), offs: offs}
}

// vocabFromEntries builds the vocabulary table from a file's entries in
// file order: entry i is arena[ends[i-1]:ends[i]] with id ids[i]. A token
// written twice keeps its later id, as Hugging Face's map does; two tokens
// sharing an id are an error. known marks the ids that have a token.
func vocabFromEntries(arena []byte, ends []uint32, ids []int32) (v strTable, known []bool, err error) {
	maxID := int32(-1)
	dense := true
	for i, id := range ids {
		if id < 0 || id > maxTokenID {
			start := uint32(0)
			if i > 0 {
				start = ends[i-1]
			}
			return v, nil, fmt.Errorf("token %q has id %d, outside [0, %d]", arena[start:ends[i]], id, maxTokenID)
		}
		maxID = max(maxID, id)
		dense = dense && id == int32(i)
	}
	offsOf := func(ends []uint32) []uint32 {
		offs := make([]uint32, len(ends)+1)
		copy(offs[1:], ends)
		return offs
	}
	if dense {
		// Ids in file order, as trained files write them: the arena is
		// already the table's text.
		v = strTable{text: string(arena), offs: offsOf(ends)}
		known = make([]bool, len(ids))
		for i := range known {
			known[i] = true
		}
		for _, id := range v.index(len(ids), func(int32) bool { return true }) {
			known[id] = false
		}
		return v, known, nil
	}
	// Any other order: drop the repeated tokens in file order, then lay
	// the rest out by id.
	file := strTable{text: string(arena), offs: offsOf(ends)}
	live := make([]bool, len(ids))
	for i := range live {
		live[i] = true
	}
	for _, i := range file.index(len(ids), func(int32) bool { return true }) {
		live[i] = false
	}
	strs := make([]string, maxID+1)
	known = make([]bool, maxID+1)
	for i, id := range ids {
		if !live[i] {
			continue
		}
		if known[id] {
			return v, nil, fmt.Errorf("tokens %q and %q share id %d", strs[id], file.at(int32(i)), id)
		}
		strs[id], known[id] = file.at(int32(i)), true
	}
	v = newStrTable(strs)
	count := 0
	for _, k := range known {
		if k {
			count++
		}
	}
	v.index(count, func(id int32) bool { return known[id] })
	return v, known, nil
}

// strHash hashes a string for strTable; the binary cache stores slots made
// with it, so changing it needs a new cache version.
func strHash[K string | []byte](s K) uint64 {
	const p0, p1, p2 = 0xa0761d6478bd642f, 0xe7037ed1a0b428db, 0x8ebc6af09c88c6e3
	h := uint64(len(s)) ^ p0
	for len(s) > 8 {
		h = mum(h^le64(s), p1)
		s = s[8:]
	}
	var w uint64
	switch n := len(s); {
	case n >= 4:
		w = uint64(le32(s))<<32 | uint64(le32(s[n-4:]))
	case n > 0:
		w = uint64(s[0])<<16 | uint64(s[n>>1])<<8 | uint64(s[n-1])
	}
	return mum(h^w, p2)
}

func mum(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

func le64[K string | []byte](s K) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func le32[K string | []byte](s K) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

// mergeTable maps a pair of ids to its merge rule by open addressing.
type mergeTable struct {
	slots []mergeSlot // len a power of two
	shift uint8       // 64 - log2(len(slots))
}

// mergeSlot is one rule; key is pairKey+1, 0 when the slot is empty. Its
// layout (16 bytes, little-endian) is the binary cache's.
type mergeSlot struct {
	key uint64
	mergeRule
}

const fibonacci = 0x9E3779B97F4A7C15

func newMergeTable(n int) mergeTable {
	size := slotCount(n, 5, 3)
	return mergeTable{slots: make([]mergeSlot, size), shift: uint8(64 - bits.TrailingZeros(uint(size)))}
}

// mergeTableOf wraps slots read from the cache; len(slots) is a power of
// two.
func mergeTableOf(slots []mergeSlot) mergeTable {
	return mergeTable{slots: slots, shift: uint8(64 - bits.TrailingZeros(uint(len(slots))))}
}

// put records a rule, replacing the pair's earlier one.
func (t *mergeTable) put(a, b int32, r mergeRule) {
	k := pairKey(a, b) + 1
	mask := uint64(len(t.slots) - 1)
	i := (k * fibonacci) >> t.shift
	for t.slots[i].key != 0 && t.slots[i].key != k {
		i = (i + 1) & mask
	}
	t.slots[i] = mergeSlot{k, r}
}

func (t *mergeTable) get(a, b int32) (mergeRule, bool) {
	if len(t.slots) == 0 {
		return mergeRule{}, false
	}
	k := pairKey(a, b) + 1
	mask := uint64(len(t.slots) - 1)
	for i := (k * fibonacci) >> t.shift; ; i = (i + 1) & mask {
		switch t.slots[i].key {
		case k:
			return t.slots[i].mergeRule, true
		case 0:
			return mergeRule{}, false
		}
	}
}

// tokenList is id -> token as written: the model's vocabulary, flat, and
// the ids past it (added tokens) one string each.
type tokenList struct {
	base strTable
	tail []string // ids from base.size() on
	// over replaces tokens inside base (rare: an added token given the id
	// of a different vocabulary entry); base then no longer matches the
	// model's own tables.
	over map[int32]string
}

func (l *tokenList) len() int { return l.base.size() + len(l.tail) }

func (l *tokenList) at(id int32) string {
	if n := int32(l.base.size()); id >= n {
		return l.tail[id-n]
	}
	if l.over != nil {
		if s, ok := l.over[id]; ok {
			return s
		}
	}
	return l.base.at(id)
}

// set gives id the token tok.
func (l *tokenList) set(id int32, tok string) {
	n := int32(l.base.size())
	if id >= n {
		if int(id-n) >= len(l.tail) {
			l.tail = append(l.tail, make([]string, int(id-n)+1-len(l.tail))...)
		}
		l.tail[id-n] = tok
		return
	}
	if l.at(id) == tok {
		return
	}
	if l.over == nil {
		l.over = map[int32]string{}
	}
	l.over[id] = tok
}

// tokensFromMap lays out a vocabulary map by id.
func tokensFromMap(vocab map[string]int32) (tokenList, []bool, error) {
	maxID := int32(-1)
	for tok, id := range vocab {
		if id < 0 || id > maxTokenID {
			return tokenList{}, nil, fmt.Errorf("token %q has id %d, outside [0, %d]", tok, id, maxTokenID)
		}
		maxID = max(maxID, id)
	}
	strs := make([]string, maxID+1)
	known := make([]bool, maxID+1)
	for tok, id := range vocab {
		strs[id], known[id] = tok, true
	}
	return tokenList{base: newStrTable(strs)}, known, nil
}
