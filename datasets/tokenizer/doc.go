// Package tokenizer is an exact, pure-Go implementation of Hugging Face
// tokenizer.json files and .tiktoken vocabularies.
package tokenizer
