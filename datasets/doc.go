// Package datasets builds the benchmark's requests from every
// --dataset-name source (spec §g). Tokenizers live in datasets/tokenizer.
package datasets
