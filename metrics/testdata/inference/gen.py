#!/usr/bin/python3
"""Writes golden.json: scipy.stats values the tests of inference.go hold
the Go statistics to. Rerun with: /usr/bin/python3 metrics/testdata/inference/gen.py
(needs python3-scipy)."""
import json
import os

import numpy as np
from scipy import stats

rng = np.random.default_rng(11)
cases = {"mannwhitney": [], "t_quantile": [], "t_cdf": [], "welch": [], "spread": []}

samples = [
    (rng.normal(10, 2, 40), rng.normal(10, 2, 55)),
    (rng.normal(10, 2, 300), rng.normal(10.6, 2, 280)),
    (np.round(rng.exponential(5, 200)), np.round(rng.exponential(6, 150))),  # many ties
    (np.array([1.0, 2, 2, 3, 3, 3]), np.array([2.0, 3, 4, 4, 5])),
    (rng.normal(0, 1, 5000), rng.normal(0.02, 1, 4000)),
]
for a, b in samples:
    r = stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic", use_continuity=True)
    cases["mannwhitney"].append({"a": a.tolist(), "b": b.tolist(), "u": float(r.statistic), "p": float(r.pvalue)})

for df in [1, 2, 3, 4, 5, 9, 19, 29, 100, 1000]:
    for p in [0.6, 0.9, 0.975, 0.995]:
        cases["t_quantile"].append({"p": p, "df": df, "q": float(stats.t.ppf(p, df))})
for df in [1, 2.5, 7, 30]:
    for t in [-3.0, -0.4, 0.0, 0.7, 2.2, 12.0]:
        cases["t_cdf"].append({"t": t, "df": df, "cdf": float(stats.t.cdf(t, df))})

for a, b in [([10.1, 10.4, 9.8], [12.0, 12.3, 11.7, 12.1]), ([5.0, 5.5, 4.9, 5.2, 5.1], [5.1, 5.3, 5.0, 5.4])]:
    r = stats.ttest_ind(a, b, equal_var=False)
    cases["welch"].append({"a": a, "b": b, "p": float(r.pvalue)})

for xs in [[1.0, 2.0, 4.0], [101.2, 99.8, 100.5, 100.1, 99.9], [3.0, 3.0]]:
    x = np.array(xs)
    m, s = x.mean(), x.std(ddof=1)
    half = stats.t.ppf(0.975, len(x) - 1) * s / np.sqrt(len(x))
    cases["spread"].append({"xs": xs, "mean": m, "stddev": s, "lo": m - half, "hi": m + half, "cv": s / m})

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden.json"), "w") as f:
    json.dump(cases, f)
