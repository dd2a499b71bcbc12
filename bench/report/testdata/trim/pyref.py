#!/usr/bin/env python3
"""Independent Python reference for the trimmed-block golden files here.

It rebuilds the report golden run (from ../output/pyref.py), trims it as
the multi-process fork of `vllm bench serve` does for --warmup-time and
--cooldown-time (window [min start + W, max end - C), token times rebuilt
from start + ttft and the running ITL sums), and prints the fork's second
block with Python's own str.format. One deliberate difference from the
fork, shared with stampede: a request without any token event counts no
token (the fork's walk would count its start time as one). Run it from
this directory; it prints nothing and exits 0 when every file matches:

    python3 pyref.py
"""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "pyout", "testdata", "output"))
from pyref import generation_fixture, np_mean, np_median, np_percentile  # noqa: E402

# name, warm-up, cool-down, pooling, percentile metrics, percentiles (as
# TestGoldenTrimmed in bench/report/trim_test.go).
CASES = [
    ("readme", 0.3, 0.5, False, ["itl", "tps", "ttft", "e2el"], [10, 25, 50, 75, 90]),
    ("cooldown_only", 0.0, 1.25, False, ["ttft", "tpot", "itl"], [99, 99.9]),
    ("no_itl_section", 1.0, 0.0, False, ["ttft", "e2el"], [99]),
    ("pooling", 0.25, 0.25, True, ["e2el"], [99]),
    ("empty_window", 0.56, 0.78, False, ["itl"], [99]),
]


def trimmed_block(outs, warmup, cooldown, pooling, selected, percentiles):
    lines = []
    say = lines.append
    min_start = min(o.start_time for o in outs)
    max_end = max(o.start_time + o.latency for o in outs)
    lo, hi = min_start + warmup, max_end - cooldown
    counted, requests, itls = 0, 0, []
    for o in outs:
        if not (o.success or o.itl):
            continue
        n = 0
        t = o.start_time + o.ttft
        if lo <= t < hi:
            n += 1
        for g in o.itl:
            t += g
            if t >= hi:
                break
            if t >= lo:
                itls.append(g)
                n += 1
        if n:
            requests += 1
            counted += n
    dur = hi - lo
    if requests:
        say("tip: install termplotlib and gnuplot to plot the metrics")
    row = lambda label, v: say("{:<40} {:<10}".format(label, v))
    rowf = lambda label, v: say("{:<40} {:<10.2f}".format(label, v))
    say("{s:{c}^{n}}".format(s="Serving Benchmark Result after warmup before cooldown", n=50, c="="))
    row("Warm-up Time:", warmup)
    row("Cool-down Time:", cooldown)
    row("Total counted tokens at filtering:", counted)
    rowf("Benchmark duration (s):", dur)
    if not pooling:
        row("Total generated tokens:", counted)
        rowf("Output token throughput (tok/s):", counted / dur)
        if "itl" in selected:
            say("{s:{c}^{n}}".format(s="Inter-token Latency", n=50, c="-"))
            rowf("Mean ITL (ms):", np_mean(itls) * 1000)
            rowf("Median ITL (ms):", np_median(itls) * 1000)
            for p in percentiles:
                word = str(int(p)) if int(p) == p else str(p)
                rowf(f"P{word} ITL (ms):", np_percentile(itls, p) * 1000)
    say("=" * 50)
    return "\n".join(lines) + "\n"


def main():
    outs, _ = generation_fixture()
    bad = 0
    for name, warmup, cooldown, pooling, selected, percentiles in CASES:
        want = trimmed_block(outs, warmup, cooldown, pooling, selected, percentiles)
        with open(name + ".txt", encoding="utf-8") as f:
            got = f.read()
        if got != want:
            bad += 1
            print(f"{name}.txt differs from the Python reference:\n--- reference\n{want}--- file\n{got}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
