package datasets

import (
	"fmt"
	"strconv"

	"github.com/stampede-bench/stampede/datasets/pyrand"
)

// RandomRerankOptions are the `random-rerank` dataset's inputs: those of
// `random` (its NumPrompts counts documents, its BatchSize documents per
// request, each plus one with NoReranker; OutputLen and PrefixLen are not
// used) plus --no-reranker.
type RandomRerankOptions struct {
	RandomOptions
	// NoReranker is --no-reranker: the model scores pairs without a native
	// reranking head, so no separator token is counted.
	NoReranker bool
}

// SampleRandomRerank is RandomDatasetForReranking: one random query and
// NumPrompts random documents, grouped into requests of [query, docs...]
// (vllm-rerank sends the first as "query", the rest as "documents").
//
// With a reranker (sep = 1) the query length is drawn around
// InputLen/2 - 1 and each document around InputLen - query - 1; request
// PromptLen = (query + 1)·docs + Σ docs. With NoReranker (sep = 0) the query
// and documents are drawn around InputLen, one document and one batch slot
// go to the query, and PromptLen = query + Σ docs. Output lengths are 0.
func SampleRandomRerank(tok Tokenizer, o RandomRerankOptions) ([]Request, error) {
	if tok == nil {
		return nil, fmt.Errorf("dataset random-rerank: a tokenizer is required (drop --skip-tokenizer-init)")
	}
	if o.Seed < 0 {
		return nil, fmt.Errorf("--seed %d: numpy.random.default_rng needs a non-negative seed", o.Seed)
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	sep := 1
	queryParam := o.InputLen/2 - sep
	if o.NoReranker {
		sep, queryParam = 0, o.InputLen
	}
	rng := pyrand.NewGenerator(uint64(o.Seed))
	queryLens, _, queryOffsets, err := samplingParams(rng, 1, o.RangeRatio, queryParam, 0, tok, logf)
	if err != nil {
		return nil, err
	}
	queryLen := int(queryLens[0])
	numDocs, batch, docParam := o.NumPrompts, o.BatchSize, o.InputLen-queryLen-sep
	if o.NoReranker {
		if numDocs <= 1 || batch <= 1 {
			return nil, fmt.Errorf("dataset random-rerank with --no-reranker: --num-prompts (%d) and --random-batch-size (%d) must both be above 1", numDocs, batch)
		}
		numDocs, batch, docParam = numDocs-1, batch-1, o.InputLen
	}
	if batch < 1 {
		return nil, fmt.Errorf("--random-batch-size %d: must be at least 1", o.BatchSize)
	}
	docLens, _, docOffsets, err := samplingParams(rng, max(numDocs, 0), o.RangeRatio, docParam, 0, tok, logf)
	if err != nil {
		return nil, err
	}
	allowed := allowedTokens(tok.VocabSize(), tok.AllSpecialIDs())
	if len(allowed) == 0 {
		return nil, fmt.Errorf("dataset random-rerank: the tokenizer's vocabulary (%d ids) has no non-special token", tok.VocabSize())
	}
	draw := vocabDraw(rng, tok.VocabSize())
	query := tokenSequence(nil, 0, allowed, queryLen, queryOffsets[0], 0)
	if err := query.finish(tok, draw); err != nil {
		return nil, fmt.Errorf("dataset random-rerank: %w", err)
	}
	docs := make([]*lengthFix, len(docLens))
	for i := range docs {
		docs[i] = tokenSequence(nil, 0, allowed, int(docLens[i]), docOffsets[i], i+1)
	}
	if err := fixLengths(tok, docs, draw, o.Workers); err != nil {
		return nil, fmt.Errorf("dataset random-rerank: %w", err)
	}
	mismatch := query.mismatch
	var reqs []Request
	for i := 0; i < len(docs); i += batch {
		group := docs[i:min(i+batch, len(docs))]
		r := Request{PromptList: []string{query.prompt}, RequestID: o.RequestIDPrefix + strconv.Itoa(i/batch)}
		r.PromptLen = len(query.ids)
		if sep > 0 {
			r.PromptLen = (len(query.ids) + sep) * len(group)
		}
		for _, d := range group {
			r.PromptList = append(r.PromptList, d.prompt)
			r.PromptLen += len(d.ids)
			mismatch += d.mismatch
		}
		reqs = append(reqs, r)
	}
	logMismatch(logf, mismatch)
	return reqs, nil
}

var randomRerankDataset = &Dataset{
	Name:      "random-rerank",
	Synthetic: true,
	Sample: func(env *Env) ([]Request, error) {
		o, err := randomOptions(env)
		if err != nil {
			return nil, err
		}
		return SampleRandomRerank(env.Tokenizer, RandomRerankOptions{RandomOptions: o, NoReranker: env.Flags.NoReranker})
	},
}
