package tokenizer

import (
	"hash/maphash"
	"slices"
	"strings"
	"sync"
)

// wordCache remembers the merged ids of words, as Hugging Face's BPE cache
// does: ordinary text repeats its words, and a lookup is several times
// cheaper than merging. It is sharded so concurrent encoders rarely meet on
// a lock, and a full shard starts over rather than tracking recency: text
// whose vocabulary drifts (random prompts taken in window order) keeps
// finding its recent words, and ordinary text refills the common ones.
type wordCache struct {
	seed   maphash.Seed
	limit  int // entries per shard
	shards [cacheShards]cacheShard
}

type cacheShard struct {
	mu    sync.RWMutex
	words map[string][]int32
}

const (
	cacheShards = 16
	// cacheShardWords bounds the cache at 16 × 1024 words (about 1 MB).
	cacheShardWords = 1024
	// cacheMaxWordBytes leaves long words (whitespace runs, SentencePiece
	// segments) uncached: they rarely repeat.
	cacheMaxWordBytes = 64
)

func newWordCache() *wordCache { return newCache(cacheShardWords) }

// newCache makes a cache of up to limit entries per shard.
func newCache(limit int) *wordCache {
	c := &wordCache{seed: maphash.MakeSeed(), limit: limit}
	for i := range c.shards {
		c.shards[i].words = make(map[string][]int32)
	}
	return c
}

func (c *wordCache) shard(word string) *cacheShard {
	return &c.shards[maphash.String(c.seed, word)%cacheShards]
}

// get appends word's cached ids to dst.
func (c *wordCache) get(dst []int32, word string) ([]int32, bool) {
	sh := c.shard(word)
	sh.mu.RLock()
	ids, ok := sh.words[word]
	sh.mu.RUnlock()
	if !ok {
		return dst, false
	}
	return append(dst, ids...), true
}

func (c *wordCache) put(word string, ids []int32) {
	sh := c.shard(word)
	sh.mu.Lock()
	if len(sh.words) >= c.limit {
		clear(sh.words)
	}
	sh.words[strings.Clone(word)] = slices.Clone(ids)
	sh.mu.Unlock()
}

// clear drops every entry; their memory goes with the next collection.
func (c *wordCache) clear() {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		sh.words = make(map[string][]int32)
		sh.mu.Unlock()
	}
}
