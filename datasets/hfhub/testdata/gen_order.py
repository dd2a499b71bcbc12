#!/usr/bin/env python3
"""Regenerates order.json: the row orders of the `datasets` library's
shuffles, drawn with real numpy.

Dataset.shuffle(seed) (load_dataset(..., streaming=False)):
    rows[default_rng(seed).permutation(n)]
IterableDataset.shuffle(seed, buffer_size=1000) (streaming=True): the
shard (file) list shuffled by a copy of default_rng(seed); rows then pass
through BufferShuffledExamplesIterable with another copy: the buffer
fills to 1000; each later row replaces buffer[i] for i from batches of
rng.integers(0, 1000, size=1000), the replaced row being yielded; at the
end rng.shuffle(buffer) and the buffer in order.

Run: /usr/bin/python3 gen_order.py > order.json
"""
import copy
import json

import numpy as np


def stream(files, seed, buffer_size=1000):
    gen = np.random.default_rng(seed)
    rng = copy.deepcopy(gen)
    order = list(range(len(files)))
    rng.shuffle(order)
    rows = [r for i in order for r in files[i]]
    rng = copy.deepcopy(gen)

    def indices():
        while True:
            yield from (int(i) for i in rng.integers(0, buffer_size, size=1000))

    it = indices()
    buf, out = [], []
    for x in rows:
        if len(buf) == buffer_size:
            i = next(it)
            out.append(buf[i])
            buf[i] = x
        else:
            buf.append(x)
    rng.shuffle(buf)
    out.extend(buf)
    return out


def whole(files, seed):
    rows = [r for f in files for r in f]
    perm = np.random.default_rng(seed).permutation(len(rows))
    return [rows[i] for i in perm]


def files_of(sizes):
    out, start = [], 0
    for s in sizes:
        out.append(list(range(start, start + s)))
        start += s
    return out


cases = []
for sizes, seed in [([1000, 1000, 1000], 11), ([700, 2300, 5], 0), ([40], 5), ([1500], 1234567)]:
    f = files_of(sizes)
    cases.append({"sizes": sizes, "seed": seed, "stream": stream(f, seed), "whole": whole(f, seed)})
print(json.dumps({"numpy": np.__version__, "cases": cases}))
