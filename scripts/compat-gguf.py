#!/usr/bin/env python3
"""compat-gguf.py writes a tiny Llama-3-architecture GGUF with random weights
and the real Llama-3 vocabulary, for scripts/compat-llamacpp.sh.

The weights are noise, so what the model says is noise too; what matters is
that llama-server loads it as a Llama-3 model, tokenizes with Llama-3's BPE
(pre-tokenizer "llama-bpe") and decodes fast on a CPU: the hidden size is
small and the output projection is tied to the embedding, so a decode step
costs little more than one 128k-row matrix-vector product per sequence.

Usage: compat-gguf.py TOKENIZER_JSON OUT_GGUF [TOKENIZER_CONFIG_JSON]
(gguf-py from llama.cpp's source on PYTHONPATH; numpy and yaml installed).
The tokenizer config, when given, supplies the chat template.

Beside OUT_GGUF it writes OUT_GGUF.partial-utf8: the ids of the tokens
whose bytes are not whole UTF-8 characters, one a line. A random model
samples them as often as any other, and a text that ends inside a
character is one llama-server's output parser refuses; the server can be
told to never sample them (--logit-bias ID-inf).
"""

import json
import sys

import numpy as np

import gguf

# The model's shape. Llama-3's ratios (grouped-query attention, RoPE base
# 500000, RMSNorm) at a size that decodes thousands of tokens a second.
CONTEXT = 2048
EMBED = 64
LAYERS = 2
HEADS = 2
KV_HEADS = 1
HEAD_DIM = EMBED // HEADS
FFN = 256
ROPE_BASE = 500000.0
RMS_EPS = 1e-5
SEED = 0


def vocabulary(tok):
    """Token strings, their types and the merges, in id order."""
    model = tok["model"]
    if model.get("type") != "BPE":
        sys.exit("compat-gguf: %s is not a BPE tokenizer" % sys.argv[1])
    added = {t["id"]: t for t in tok.get("added_tokens", [])}
    size = max(list(model["vocab"].values()) + list(added)) + 1
    tokens = [None] * size
    for text, i in model["vocab"].items():
        tokens[i] = text
    types = [gguf.TokenType.NORMAL] * size
    for i, t in added.items():
        tokens[i] = t["content"]
        types[i] = gguf.TokenType.CONTROL if t.get("special") else gguf.TokenType.USER_DEFINED
    for i, text in enumerate(tokens):
        if text is None:
            tokens[i] = "[PAD%d]" % i
            types[i] = gguf.TokenType.UNUSED
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    return tokens, types, merges


def byte_decoder():
    """The inverse of byte-level BPE's map from bytes to printable code points."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) + \
        list(range(ord("\u00ae"), ord("\u00ff") + 1))
    points = printable[:]
    shifted = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            points.append(256 + shifted)
            shifted += 1
    return {chr(c): b for b, c in zip(printable, points)}


def partial_utf8(tok):
    """Ids of the vocabulary's tokens that are not whole UTF-8 characters."""
    decoder = byte_decoder()
    ids = []
    for text, i in tok["model"]["vocab"].items():
        try:
            bytes(decoder[c] for c in text).decode("utf-8")
        except (KeyError, UnicodeDecodeError):
            ids.append(i)
    return sorted(ids)


def token_id(tokens, text):
    try:
        return tokens.index(text)
    except ValueError:
        sys.exit("compat-gguf: the vocabulary has no %s" % text)


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    with open(sys.argv[1], encoding="utf-8") as f:
        tok = json.load(f)
    template = None
    if len(sys.argv) == 4:
        with open(sys.argv[3], encoding="utf-8") as f:
            template = json.load(f).get("chat_template")
    tokens, types, merges = vocabulary(tok)

    w = gguf.GGUFWriter(sys.argv[2], "llama")
    w.add_name("stampede-compat-llama3-tiny")
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_vocab_size(len(tokens))
    w.add_context_length(CONTEXT)
    w.add_embedding_length(EMBED)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_rope_freq_base(ROPE_BASE)
    w.add_layer_norm_rms_eps(RMS_EPS)

    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("llama-bpe")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(token_id(tokens, "<|begin_of_text|>"))
    # The instruct tokenizer ends a turn with <|eot_id|>, as its
    # generation config does.
    w.add_eos_token_id(token_id(tokens, "<|eot_id|>"))
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    if template:
        w.add_chat_template(template)

    rng = np.random.default_rng(SEED)

    def weight(rows, cols):
        return (rng.standard_normal((rows, cols), dtype=np.float32) * 0.02).astype(np.float32)

    def ones(n):
        return np.ones(n, dtype=np.float32)

    # numpy's (rows, cols) is ggml's {cols, rows}: token_embd is
    # {n_embd, n_vocab} as llama.cpp loads it. No output.weight: the
    # embedding doubles as the output projection.
    w.add_tensor("token_embd.weight", weight(len(tokens), EMBED))
    w.add_tensor("output_norm.weight", ones(EMBED))
    for b in range(LAYERS):
        p = "blk.%d." % b
        w.add_tensor(p + "attn_norm.weight", ones(EMBED))
        w.add_tensor(p + "attn_q.weight", weight(HEADS * HEAD_DIM, EMBED))
        w.add_tensor(p + "attn_k.weight", weight(KV_HEADS * HEAD_DIM, EMBED))
        w.add_tensor(p + "attn_v.weight", weight(KV_HEADS * HEAD_DIM, EMBED))
        w.add_tensor(p + "attn_output.weight", weight(EMBED, HEADS * HEAD_DIM))
        w.add_tensor(p + "ffn_norm.weight", ones(EMBED))
        w.add_tensor(p + "ffn_gate.weight", weight(FFN, EMBED))
        w.add_tensor(p + "ffn_up.weight", weight(FFN, EMBED))
        w.add_tensor(p + "ffn_down.weight", weight(EMBED, FFN))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    with open(sys.argv[2] + ".partial-utf8", "w", encoding="ascii") as f:
        f.writelines("%d\n" % i for i in partial_utf8(tok))


if __name__ == "__main__":
    main()
