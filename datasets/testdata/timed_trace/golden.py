"""Regenerates golden_<seed>.json: what vLLM's TimedTrace builds from
trace.jsonl, computed with CPython's own hash() and random.Random.

Run with Python 3.11+ (SipHash-1-3), once per seed:
    PYTHONHASHSEED=0 python3 golden.py
    PYTHONHASHSEED=42 python3 golden.py
The vocabulary is the test tokenizer's (datasets/tokenizer_test.go): ids
0..296 are the base vocabulary, 0 and 297 are special, so the sampled
vocabulary is 1..296.
"""
import json
import os
import random
import sys

assert sys.hash_info.algorithm == "siphash13", sys.hash_info
VOCAB = list(range(1, 297))
CHUNK = 16
SEC_MULTIPLIER = 0.001


def expand(hash_ids, target):
    out = []
    for h in hash_ids:
        size = CHUNK if target >= CHUNK else target
        seed = hash(f"{h}:{size}") & 0xFFFFFFFF
        out.extend(random.Random(seed).choices(VOCAB, k=size))
        target -= size
        if target <= 0:
            break
    return out


here = os.path.dirname(os.path.abspath(__file__))
rows = []
with open(os.path.join(here, "trace.jsonl")) as f:
    for ind, line in enumerate(f.readlines()):
        e = json.loads(line.strip())
        ids = expand(e.get("hash_ids", []), e["input_length"])
        rows.append({
            "request_id": "p-" + str(ind),
            "prompt_ids": ids,
            "output_len": e["output_length"],
            "timestamp_sec": float(e["timestamp"]) * SEC_MULTIPLIER,
        })
seed = os.environ["PYTHONHASHSEED"]
with open(os.path.join(here, f"golden_{seed}.json"), "w") as f:
    f.write("[\n" + ",\n".join(json.dumps(r) for r in rows) + "\n]\n")
