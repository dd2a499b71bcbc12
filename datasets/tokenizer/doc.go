// Package tokenizer is an exact, pure-Go implementation of Hugging Face
// tokenizer.json files and .tiktoken vocabularies: for the same file and
// text it produces the ids of Hugging Face's Rust tokenizers library (and
// so of vLLM), which the golden tests check against files written by the
// library itself (testdata/gen/golden.mjs).
//
// # Finding and loading
//
// Resolve maps --tokenizer/--model to a file: a local tokenizer.json,
// .tiktoken or tiktoken-format .model file, or a directory holding one; else
// a hub model id, read from the Hugging Face cache (HF_HOME, HF_HUB_CACHE)
// and downloaded into it from HF_ENDPOINT with HF_TOKEN unless
// HF_HUB_OFFLINE is set. Load reads the file; FromPretrained does both.
//
// A tokenizer_config.json beside the file makes the Tokenizer behave as
// transformers' does (which is what vLLM counts with): AllSpecialIDs is
// all_special_ids, and Decode applies clean_up_tokenization_spaces.
//
// # What is supported
//
//   - models: BPE (byte-level, SentencePiece-style with byte_fallback and
//     unk/fuse_unk, ignore_merges, merges as "a b" or ["a", "b"]),
//     WordPiece, and Unigram (Viterbi over the vocabulary's scores, unk at
//     the lowest score less 10 with runs fused, byte_fallback);
//   - normalizers: NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, Strip,
//     Prepend, Replace, BertNormalizer, Precompiled (SentencePiece's
//     charsmap, applied per grapheme cluster as Hugging Face does), Sequence;
//   - pre-tokenizers: ByteLevel (as the last one), Split (every behavior,
//     invert), Metaspace, Digits, Punctuation, CharDelimiterSplit,
//     Whitespace, WhitespaceSplit, BertPreTokenizer, Sequence;
//   - added tokens, special or not, matched leftmost-longest in the raw
//     text (or, for normalized ones, the normalized text) with lstrip,
//     rstrip and single_word;
//   - post-processors: TemplateProcessing, BertProcessing,
//     RobertaProcessing, ByteLevel, Sequence;
//   - decoders: ByteLevel, ByteFallback, Fuse, Strip, Replace, Metaspace,
//     WordPiece, Sequence.
//
// Any other component (WordLevel models, ...) fails to load with an error
// naming it. A file's truncation and padding are
// ignored, as transformers ignores them unless asked.
//
// The split patterns of Llama-3/cl100k, Qwen, o200k and GPT-2 run on
// hand-written scanners (FuzzScanners checks them against regexp2); other
// patterns run on regexp2 with its default syntax, the closest Go has to
// Oniguruma. Patterns using class intersection (&&) are rejected rather
// than misread.
//
// A .tiktoken file carries no split pattern, so its family is recognised
// by its number of ranks (r50k, cl100k, Llama-3, o200k); its special tokens
// come from a tokenizer_config.json beside it.
//
// # Unicode versions
//
// Hugging Face's BERT normalizer and punctuation split use Unicode tables
// older than Go's; unicodeskew.go, generated from the library itself by
// testdata/gen/unicodeskew.mjs, lists the code points they leave
// unassigned. Grapheme clusters (for Precompiled) come from rivo/uniseg's
// tables (Unicode 15). Normalization forms and regex classes use Go's tables, which
// agree with Hugging Face on every golden text; a code point assigned in a
// future Unicode version may still differ until the table is regenerated.
//
// # Concurrency
//
// A Tokenizer is immutable after loading apart from its internal word cache
// and scratch pools, and is safe for concurrent use; EncodeBatch encodes in
// parallel on GOMAXPROCS goroutines.
package tokenizer
