#!/usr/bin/env bash
# unigram.sh writes datasets/tokenizer/testdata/unigram/tokenizer.json: a
# Unigram tokenizer in XLM-RoBERTa's layout (Precompiled normalizer,
# Metaspace, RobertaProcessing), whose model SentencePiece's own trainer
# (Debian's `sentencepiece` package, spm_train) learns from Go's
# documentation and sources. Its normalizer is SentencePiece's nmt_nfkc
# charsmap, the one T5, XLM-RoBERTa and most multilingual embedding models
# carry. The file is committed; after regenerating it, regenerate the
# golden files (FAMILIES=unigram,unigram_fallback,unigram_nfkc node
# testdata/gen/golden.mjs).
#
# Usage: datasets/tokenizer/testdata/gen/unigram.sh   (needs spm_train, node, go)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=$here/../unigram/tokenizer.json
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

goroot=$(go env GOROOT)
# The corpus: Go's documentation and a few packages' sources (English prose,
# code, and the handful of scripts their tests use), one line per sentence.
find "$goroot/doc" -maxdepth 1 -type f \( -name '*.html' -o -name '*.md' \) -print0 |
	sort -z | xargs -0 cat >"$work/corpus.txt"
for pkg in fmt strings unicode/utf8 net/url html/template encoding/json net/http/cookiejar; do
	find "$goroot/src/$pkg" -maxdepth 1 -name '*.go' -print0 | sort -z | xargs -0 cat >>"$work/corpus.txt"
done

spm_train --input="$work/corpus.txt" --model_prefix="$work/spm" --model_type=unigram \
	--vocab_size=8000 --character_coverage=0.9995 --byte_fallback=true \
	--normalization_rule_name=nmt_nfkc --num_threads=1 --max_sentence_length=8192 \
	--minloglevel=2 >/dev/null
node "$here/unigram.mjs" "$work/spm.model" "$out"
echo "wrote $out ($(wc -c <"$out") bytes)"
