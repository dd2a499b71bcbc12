package tokenizer

import (
	"sort"
	"unicode"
	"unicode/utf8"
)

// addedToken is an entry of tokenizer.json's added_tokens.
type addedToken struct {
	ID         int32  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// tokenTrie finds added tokens in text, leftmost-longest as Hugging Face's
// Aho-Corasick automaton does: the earliest start wins, then the longest
// token starting there. Nodes are flat; each node's children are a sorted
// run of edges.
type tokenTrie struct {
	root  [256]int32 // first byte -> node, or 0
	nodes []trieNode
	edges []trieEdge
}

type trieNode struct {
	token      int32 // index into the added tokens, or -1
	edgeStart  int32
	edgeLength int32
}

type trieEdge struct {
	b    byte
	node int32
}

// newTokenTrie builds the trie of the given tokens' match strings.
func newTokenTrie(match []string, use func(i int) bool) *tokenTrie {
	// Build with maps, then flatten into sorted edge runs.
	type building struct {
		token    int32
		children map[byte]int
	}
	nodes := []building{{token: -1}}
	any := false
	for i, s := range match {
		if !use(i) || s == "" {
			continue
		}
		any = true
		n := 0
		for k := 0; k < len(s); k++ {
			if nodes[n].children == nil {
				nodes[n].children = map[byte]int{}
			}
			c, ok := nodes[n].children[s[k]]
			if !ok {
				c = len(nodes)
				nodes = append(nodes, building{token: -1})
				nodes[n].children[s[k]] = c
			}
			n = c
		}
		// A repeated content keeps its first entry.
		if nodes[n].token < 0 {
			nodes[n].token = int32(i)
		}
	}
	if !any {
		return nil
	}
	t := &tokenTrie{nodes: make([]trieNode, len(nodes))}
	for i, b := range nodes {
		keys := make([]int, 0, len(b.children))
		for k := range b.children {
			keys = append(keys, int(k))
		}
		sort.Ints(keys)
		t.nodes[i] = trieNode{token: b.token, edgeStart: int32(len(t.edges)), edgeLength: int32(len(keys))}
		for _, k := range keys {
			t.edges = append(t.edges, trieEdge{byte(k), int32(b.children[byte(k)])})
		}
	}
	for _, e := range t.edges[t.nodes[0].edgeStart : t.nodes[0].edgeStart+t.nodes[0].edgeLength] {
		t.root[e.b] = e.node
	}
	return t
}

func (t *tokenTrie) child(n int32, b byte) int32 {
	node := &t.nodes[n]
	edges := t.edges[node.edgeStart : node.edgeStart+node.edgeLength]
	lo, hi := 0, len(edges)
	for lo < hi {
		mid := (lo + hi) / 2
		switch {
		case edges[mid].b == b:
			return edges[mid].node
		case edges[mid].b < b:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return 0
}

// longestAt returns the token index and end of the longest token starting
// at i, or -1.
func (t *tokenTrie) longestAt(s string, i int) (token int32, end int) {
	token = -1
	n := t.root[s[i]]
	for k := i + 1; n != 0; k++ {
		if tok := t.nodes[n].token; tok >= 0 {
			token, end = tok, k
		}
		if k >= len(s) {
			break
		}
		n = t.child(n, s[k])
	}
	return token, end
}

// tokenMatch is a stretch of text that is an added token (token >= 0) or
// plain text (token -1).
type tokenMatch struct {
	start, end int
	token      int32
}

// appendSplits cuts s into added tokens and the text between them, applying
// single_word, lstrip and rstrip as Hugging Face's find_matches does.
func (t *tokenTrie) appendSplits(dst []tokenMatch, s string, tokens []addedToken) []tokenMatch {
	startOffset := 0
	for i := 0; i < len(s); {
		if t.root[s[i]] == 0 {
			i++
			continue
		}
		tok, end := t.longestAt(s, i)
		if tok < 0 {
			i++
			continue
		}
		start, stop := i, end
		i = end
		at := &tokens[tok]
		if at.SingleWord {
			startSpace := start == 0 || !endsWithWord(s[:start])
			stopSpace := stop == len(s) || !startsWithWord(s[stop:])
			if !startSpace || !stopSpace {
				continue
			}
		}
		if at.LStrip {
			start = max(len(trimRightSpace(s[:start])), startOffset)
		}
		if at.RStrip {
			stop = len(s) - len(trimLeftSpace(s[stop:]))
		}
		if start > startOffset {
			dst = append(dst, tokenMatch{startOffset, start, -1})
		}
		dst = append(dst, tokenMatch{start, stop, tok})
		startOffset = stop
	}
	if startOffset != len(s) || len(s) == 0 {
		dst = append(dst, tokenMatch{startOffset, len(s), -1})
	}
	return dst
}

func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return s != "" && isWordChar(r)
}

func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return s != "" && isWordChar(r)
}

func trimRightSpace(s string) string {
	for s != "" {
		r, n := utf8.DecodeLastRuneInString(s)
		if !unicode.IsSpace(r) {
			break
		}
		s = s[:len(s)-n]
	}
	return s
}

func trimLeftSpace(s string) string {
	for s != "" {
		r, n := utf8.DecodeRuneInString(s)
		if !unicode.IsSpace(r) {
			break
		}
		s = s[n:]
	}
	return s
}
