#!/usr/bin/env python3
"""Writes numpy_stats.json: numpy's own statistics over deterministic lists.

Each list is n float seconds made from integer nanoseconds drawn with a
64-bit LCG (stats_numpy_test.go draws the same integers), converted as
stampede converts them (ns / 1e9). For each list numpy gives the sum
(np.add.reduce), mean, median, std and percentiles that `vllm bench serve`
takes; the Go test must reproduce every value to the last bit. Needs
numpy < 2.3 (the order vLLM's pinned numpy 2.2 sums in; Debian's
python3-numpy qualifies). Regenerate from this directory with:

    /usr/bin/python3 gen.py > numpy_stats.json
"""
import json
import sys

import numpy as np

PERCENTILES = [0.0, 1.5, 12.5, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0]
MASK = (1 << 64) - 1


def draw(dist, n, seed):
    x, out = seed, []
    for _ in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) & MASK
        r = x >> 11  # 53 bits
        if dist == "itl":  # 15-35 ms decode steps, 1 in 512 stalls of up to 4 s
            ns = 15_000_000 + r % 20_000_000 if r % 512 else r % 4_000_000_000
        elif dist == "wide":  # 1 us to 100 s, spread over eight decades
            ns = 1_000 + (r % 10_000) * 10 ** (r >> 40 & 7)
        elif dist == "tpot":  # a duration over a token count: every mantissa bit in use
            out.append((r % 2_000_000_000) / 1e9 / (1 + (r >> 45) % 999))
            continue
        else:  # "ttft": 50 ms to 2 s
            ns = 50_000_000 + r % 1_950_000_000
        out.append(ns / 1e9)
    return out


CASES = [("itl", 8191, 1), ("itl", 8192, 2), ("itl", 8193, 3), ("itl", 10_000, 4), ("itl", 16_391, 5),
         ("itl", 100_003, 6), ("wide", 12_345, 7), ("wide", 40_000, 8), ("ttft", 24_576, 9),
         ("ttft", 30_001, 10), ("wide", 7, 11), ("itl", 1000, 12), ("tpot", 10_000, 13),
         ("tpot", 65_537, 14), ("tpot", 20_000, 15)]


def main():
    major, minor = (int(v) for v in np.__version__.split(".")[:2])
    if (major, minor) >= (2, 3):
        sys.exit(f"numpy {np.__version__} sums in another order; use numpy < 2.3")
    cases = []
    for dist, n, seed in CASES:
        a = np.array(draw(dist, n, seed))
        cases.append({
            "dist": dist, "n": n, "seed": seed,
            "sum": float(np.add.reduce(a)), "mean": float(np.mean(a)), "median": float(np.median(a)),
            "std": float(np.std(a)),
            "percentiles": [[p, float(np.percentile(a, p))] for p in PERCENTILES],
        })
    json.dump({"numpy": np.__version__, "cases": cases}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
