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
	var all []Request
	err := StreamRandomRerank(tok, o, func(batch []Request) error {
		all = append(all, batch...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return all, nil
}

// StreamRandomRerank is SampleRandomRerank handing the requests to emit a
// window of documents at a time (random_window.go).
func StreamRandomRerank(tok Tokenizer, o RandomRerankOptions, emit Emit) error {
	if tok == nil {
		return fmt.Errorf("dataset random-rerank: a tokenizer is required (drop --skip-tokenizer-init)")
	}
	if o.Seed < 0 {
		return fmt.Errorf("--seed %d: numpy.random.default_rng needs a non-negative seed", o.Seed)
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
		return err
	}
	queryLen := int(queryLens[0])
	numDocs, batch, docParam := o.NumPrompts, o.BatchSize, o.InputLen-queryLen-sep
	if o.NoReranker {
		if numDocs <= 1 || batch <= 1 {
			return fmt.Errorf("dataset random-rerank with --no-reranker: --num-prompts (%d) and --random-batch-size (%d) must both be above 1", numDocs, batch)
		}
		numDocs, batch, docParam = numDocs-1, batch-1, o.InputLen
	}
	if batch < 1 {
		return fmt.Errorf("--random-batch-size %d: must be at least 1", o.BatchSize)
	}
	docLens, _, docOffsets, err := samplingParams(rng, max(numDocs, 0), o.RangeRatio, docParam, 0, tok, logf)
	if err != nil {
		return err
	}
	allowed := allowedTokens(tok.VocabSize(), tok.AllSpecialIDs())
	if len(allowed) == 0 {
		return fmt.Errorf("dataset random-rerank: the tokenizer's vocabulary (%d ids) has no non-special token", tok.VocabSize())
	}
	draw := vocabDraw(rng, tok.VocabSize())
	query := tokenSequence(nil, 0, allowed, queryLen, queryOffsets[0], 0)
	query.dropIDs = true
	if err := query.finish(tok, draw); err != nil {
		return fmt.Errorf("dataset random-rerank: %w", err)
	}
	g := &tokenWindows{tok: tok, allowed: allowed, inputLens: docLens, offsets: docOffsets, index0: 1,
		draw: draw, workers: o.Workers, window: o.window}
	if g.window <= 0 {
		g.window = promptWindow(int(meanOf(docLens)), batch)
	} else {
		g.window = max(batch, g.window/batch*batch)
	}
	mismatch := query.mismatch
	var reqs []Request
	err = g.build("random-rerank", nil, func(lo int, docs []*lengthFix) error {
		reqs = reqs[:0]
		for i := 0; i < len(docs); i += batch {
			group := docs[i:min(i+batch, len(docs))]
			r := Request{PromptList: []string{query.prompt}, RequestID: o.RequestIDPrefix + strconv.Itoa((lo+i)/batch)}
			r.PromptLen = query.count
			if sep > 0 {
				r.PromptLen = (query.count + sep) * len(group)
			}
			for _, d := range group {
				r.PromptList = append(r.PromptList, d.prompt)
				r.PromptLen += d.count
				mismatch += d.mismatch
			}
			reqs = append(reqs, r)
		}
		return emit(reqs)
	})
	if err != nil {
		return err
	}
	logMismatch(logf, mismatch)
	return nil
}

var randomRerankDataset = &Dataset{
	Name:      "random-rerank",
	Synthetic: true,
	Stream: func(env *Env, emit Emit) error {
		o, err := randomOptions(env)
		if err != nil {
			return err
		}
		return StreamRandomRerank(env.Tokenizer, RandomRerankOptions{RandomOptions: o, NoReranker: env.Flags.NoReranker}, emit)
	},
}
