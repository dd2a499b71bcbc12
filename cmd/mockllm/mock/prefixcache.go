package mock

import (
	"container/list"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"

	"github.com/valyala/fastjson"
)

// Prefix cache scopes (Config.PrefixCache).
const (
	PrefixCacheOff     = ""
	PrefixCacheGlobal  = "global"
	PrefixCacheSession = "session"
)

// ParsePrefixCache reads a --prefix-cache value.
func ParsePrefixCache(s string) (string, error) {
	switch s {
	case "off", "":
		return PrefixCacheOff, nil
	case PrefixCacheGlobal, PrefixCacheSession:
		return s, nil
	}
	return "", fmt.Errorf("--prefix-cache %q: want off, global or session", s)
}

// prefixCache models a server's automatic prefix caching for chat
// requests, at the granularity of whole messages: a chat prompt is a chain
// of messages, and message i is cached when the chain up to and including
// it (its role and content, and everything before it) was seen before and
// not evicted. A request's cached tokens are those of its longest cached
// chain of leading messages; prefill then costs PrefillPerToken only for
// the rest, so TTFT falls as a conversation's history grows and stays
// cached. Every admitted request caches its whole prompt and, as a server
// caches the KV of what it generated, its own answer as the assistant
// message after it: the next turn of a conversation that sends the
// answer back finds all but its new question cached.
//
// With PrefixCacheSession the chain starts from the request's
// X-Session-ID, so conversations never share entries (a per-session
// cache, as a KV offload tier keyed by session would be); with
// PrefixCacheGlobal identical prefixes (a shared system prompt) are shared.
//
// Capacity is in tokens; the least recently used entries go first. The
// event loops share one cache, behind a mutex: a mock's cost, not a
// server's.
type prefixCache struct {
	perSession bool
	capacity   int

	mu      sync.Mutex
	entries map[uint64]*list.Element // chain hash → its entry in lru
	lru     list.List                // front: most recently used
	held    int                      // tokens of every entry
	// hits and queried count cached and prompt tokens over all requests.
	hits, queried uint64
}

type prefixEntry struct {
	chain  uint64
	tokens int
}

func newPrefixCache(scope string, capacityTokens int) *prefixCache {
	if scope == PrefixCacheOff {
		return nil
	}
	return &prefixCache{perSession: scope == PrefixCacheSession, capacity: capacityTokens, entries: map[uint64]*list.Element{}}
}

// chainMessage extends chain by one message.
func chainMessage(chain uint64, role, content []byte) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(chain >> (8 * i))
	}
	h.Write(b[:])
	h.Write(role)
	h.Write([]byte{0})
	h.Write(content)
	return h.Sum64()
}

// admitPrefix looks up a chat request's messages (a completions request's
// string prompt as one message; body already validated by
// parseGeneration), caches them and the answer st will generate, and
// returns how many prompt tokens were cached.
func (s *Server) admitPrefix(ls *loopState, req *httpRequest, st *stream) int {
	c := s.prefix
	v, err := ls.parser.ParseBytes(req.body)
	if err != nil {
		return 0
	}
	var chain uint64
	if c.perSession {
		chain = chainMessage(0, []byte("session"), req.session)
	}
	type link struct {
		chain  uint64
		tokens int
	}
	msgs := v.GetArray("messages")
	links := make([]link, 0, len(msgs)+1)
	for _, m := range msgs {
		chain = chainMessage(chain, m.GetStringBytes("role"), messageText(m.Get("content")))
		links = append(links, link{chain, s.messageTokens(ls, m.Get("content"))})
	}
	if p := v.Get("prompt"); msgs == nil && p != nil && p.Type() == fastjson.TypeString {
		// A completions prompt is one message; token-id and batched
		// prompts are not cached.
		chain = chainMessage(chain, []byte("prompt"), p.GetStringBytes())
		links = append(links, link{chain, s.messageTokens(ls, p)})
	}
	var answer strings.Builder
	for k := range st.outTokens {
		answer.WriteString(st.word(k))
	}
	// The answer is cached for the next turn; it costs this turn nothing.
	links = append(links, link{chainMessage(chain, []byte("assistant"), []byte(answer.String())), st.outTokens})

	c.mu.Lock()
	defer c.mu.Unlock()
	cached, prompt, hit := 0, 0, true
	for i, l := range links {
		e, ok := c.entries[l.chain]
		if i < len(links)-1 {
			prompt += l.tokens
			if hit = hit && ok; hit {
				cached += l.tokens
			}
		}
		if ok {
			c.lru.MoveToFront(e)
			continue
		}
		c.entries[l.chain] = c.lru.PushFront(prefixEntry(l))
		c.held += l.tokens
	}
	for c.held > c.capacity && c.lru.Len() > 0 {
		e := c.lru.Back()
		pe := c.lru.Remove(e).(prefixEntry)
		delete(c.entries, pe.chain)
		c.held -= pe.tokens
	}
	c.hits += uint64(cached)
	c.queried += uint64(prompt)
	// The usage's prompt count comes from the message tokens alone too.
	return min(cached, st.promptTotal)
}

// reset drops every entry, as vLLM's POST /reset_prefix_cache does; the
// hit and query totals, like vLLM's counters, keep counting.
func (c *prefixCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.entries)
	c.lru.Init()
	c.held = 0
}

// serveResetPrefixCache is POST /reset_prefix_cache.
func (s *Server) serveResetPrefixCache(cn *conn, ls *loopState, req *httpRequest, _ int64) bool {
	if s.prefix != nil {
		s.prefix.reset()
	}
	s.reply(cn, ls, req, 200, nil)
	return false
}

// messageText is a message content's text: the string, or its text parts
// joined.
func messageText(c *fastjson.Value) []byte {
	if c == nil {
		return nil
	}
	if c.Type() == fastjson.TypeString {
		return c.GetStringBytes()
	}
	var out []byte
	for _, part := range c.GetArray() {
		out = append(out, part.GetStringBytes("text")...)
		out = append(out, 0)
	}
	return out
}

// messageTokens counts a content's tokens as countMessages does.
func (s *Server) messageTokens(ls *loopState, c *fastjson.Value) int {
	if c == nil {
		return 0
	}
	if c.Type() == fastjson.TypeString {
		ls.ids = s.cfg.Tokenizer.Encode(ls.ids[:0], string(c.GetStringBytes()), false)
		return len(ls.ids)
	}
	n := 0
	for _, part := range c.GetArray() {
		if text := part.GetStringBytes("text"); text != nil {
			ls.ids = s.cfg.Tokenizer.Encode(ls.ids[:0], string(text), false)
			n += len(ls.ids)
		}
	}
	return n
}

// PrefixCacheStats are the prefix cache's totals: prompt tokens looked up
// and of those found cached.
type PrefixCacheStats struct{ Queried, Hits uint64 }

// PrefixCache returns the prefix cache's totals (zero when it is off).
func (s *Server) PrefixCache() PrefixCacheStats {
	if s.prefix == nil {
		return PrefixCacheStats{}
	}
	s.prefix.mu.Lock()
	defer s.prefix.mu.Unlock()
	return PrefixCacheStats{Queried: s.prefix.queried, Hits: s.prefix.hits}
}
