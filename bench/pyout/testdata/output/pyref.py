#!/usr/bin/env python3
"""Independent Python reference for the golden files in this directory.

It rebuilds every fixture of bench/report_test.go (same integer formulas),
computes the metrics with a pure-Python transcription of numpy 2.2's
algorithms (np.add.reduce over blocks of 8,192 values, each summed
pairwise, the block sums added left to right; linear percentile with
_lerp), prints the result block with Python's own str.format and
serialises the result dict with the json module. The default-path cases
(generation_default, generation_long: no --save-detailed) are the same
per-request data as a detailed run; Go records them through its shards'
recorders and must still print exactly these numbers. Run it from this
directory; it prints nothing and exits 0 when every file matches:

    python3 pyref.py

When numpy (< 2.3) is importable, the transcription is also checked
against numpy itself on every list it summarises.
"""
import json
import math
import sys

MS = 1_000_000


def pairwise(a):
    n = len(a)
    if n < 8:
        res = 0.0
        for v in a:
            res += v
        return res
    if n <= 128:
        r = list(a[:8])
        i = 8
        while i < n - n % 8:
            for j in range(8):
                r[j] += a[i + j]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        while i < n:
            res += a[i]
            i += 1
        return res
    half = n // 2
    half -= half % 8
    return pairwise(a[:half]) + pairwise(a[half:])


NP_BUFSIZE = 8192  # numpy's default ufunc buffer: the add loop sees at most this many values


def np_sum(a):
    res = 0.0
    for i in range(0, len(a), NP_BUFSIZE):
        res += pairwise(a[i:i + NP_BUFSIZE])
    return res


def np_mean(a):
    return np_sum(a) / len(a) if a else 0.0


def np_std(a):
    if not a:
        return 0.0
    m = np_mean(a)
    return math.sqrt(np_sum([(v - m) * (v - m) for v in a]) / len(a))


def np_median(a):
    s = sorted(a)
    n = len(s)
    if n == 0:
        return 0.0
    return s[n // 2] if n % 2 else np_sum(s[n // 2 - 1:n // 2 + 1]) / 2


def np_percentile(a, p):
    s = sorted(a)
    n = len(s)
    if n == 0:
        return 0.0
    h = (n - 1) * (p / 100)
    if h >= n - 1:
        return s[-1]
    i = math.floor(h)
    g = h - i
    d = s[i + 1] - s[i]
    return s[i + 1] - d * (1 - g) if g >= 0.5 else s[i] + d * g


class Out:
    def __init__(self, success=False, error="", prompt_len=0, output_tokens=0, ttft=0.0,
                 latency=0.0, itl=(), start=0.0, queue=0.0, text="", seqs=1):
        self.success, self.error, self.prompt_len = success, error, prompt_len
        self.output_tokens, self.ttft, self.latency = output_tokens, ttft, latency
        self.itl, self.start_time, self.client_queue_time = list(itl), start, queue
        self.generated_text, self.num_input_sequences = text, seqs


def generation_fixture():
    outs = []
    for i in range(12):
        start, queue = i * 100 * MS, (i % 4) * 5 * MS
        o = Out(prompt_len=100 + 7 * i, start=start / 1e9, queue=queue / 1e9)
        if i == 4:
            o.error = "Internal Server Error"
        elif i == 9:
            o.error = "Traceback (most recent call last):\n  ConnectionResetError: [Errno 104]"
            o.ttft = 80 * MS / 1e9
        else:
            ttft = (60 + 13 * i) * MS
            gaps = 0 if i == 7 else 2 + i % 5
            itl = [(20 + (i * 7 + g * 3) % 17) * MS + (i * 1357) % 1000 * 1000 for g in range(gaps)]
            o.success, o.ttft = True, ttft / 1e9
            o.itl = [g / 1e9 for g in itl]
            o.latency = (ttft + sum(itl)) / 1e9
            events = len(itl) + 1
            o.output_tokens = events * 2 if i % 3 else 0
            o.generated_text = "tok " * events + "é€"
        outs.append(o)
    return outs, 5432 * MS / 1e9


def long_fixture():
    outs, dur = [], 0
    for i in range(24):
        start = i * 37 * MS + (i * i * 7919 % 1000) * 1000
        queue = (i % 5) * 3 * MS
        o = Out(prompt_len=200 + i, start=start / 1e9, queue=queue / 1e9)
        if i == 7:
            o.error = "Server disconnected"
            outs.append(o)
            continue
        ttft = 40 * MS + (i * 104729 % 50000) * 1000 + i
        events = 300 if i == 13 else 400 + i * 131 % 600
        itl = []
        for k in range(1, events):
            gap = 15 * MS + ((i * 7919 + k * 104729) % 20011) * 1000 + k * k % 997
            if i == 11 and k == 100:
                gap = 5_000_000_000 + 123
            itl.append(gap)
        o.ttft, o.itl = ttft / 1e9, [g / 1e9 for g in itl]
        if i == 13:
            # A cut stream: Go records its first token event only.
            o.error, o.itl = "Connection reset by peer", []
        else:
            o.success, o.latency = True, (ttft + sum(itl)) / 1e9
            o.output_tokens = events if i % 2 == 0 else 0
            o.generated_text = "w " * events
            dur = max(dur, start + ttft + sum(itl) + 3 * MS)
        outs.append(o)
    return outs, dur / 1e9


def stats(values, percentiles):
    if HAVE_NUMPY and values:
        check_numpy(values, percentiles)
    return (np_mean(values) * 1000, np_median(values) * 1000, np_std(values) * 1000,
            [(p, np_percentile(values, p) * 1000) for p in percentiles])


try:
    import numpy
    # numpy 2.3 sums in another order; vLLM pins 2.2.
    HAVE_NUMPY = tuple(int(v) for v in numpy.__version__.split(".")[:2]) < (2, 3)
except ImportError:
    HAVE_NUMPY = False


def check_numpy(values, percentiles):
    """Fail loudly when the transcription and numpy part ways."""
    got = [np_mean(values), np_median(values), np_std(values)] + [np_percentile(values, p) for p in percentiles]
    want = [float(numpy.mean(values)), float(numpy.median(values)), float(numpy.std(values))] + \
        [float(numpy.percentile(values, p)) for p in percentiles]
    if got != want:
        sys.exit(f"transcription differs from numpy {numpy.__version__} on {len(values)} values: {got} != {want}")


def run_case(outs, dur, cfg):
    lines = []
    say = lines.append
    pooling = cfg.get("pooling", False)
    count = (lambda t: len(t.split())) if cfg["tokenizer"] else None
    ok = [o for o in outs if o.success]
    lens, total_in, ttfts, tpots, all_tpots, itls, e2els = [], 0, [], [], [], [], []
    for o in outs:
        if not o.success:
            lens.append(0)
            continue
        n = o.output_tokens or (count(o.generated_text) if count else 1)
        lens.append(n)
        total_in += o.prompt_len
        tpot = 0.0
        if n > 1:
            tpot = (o.latency - o.ttft) / (n - 1)
            tpots.append(tpot)
        all_tpots.append(tpot)
        itls += o.itl
        ttfts.append(o.ttft)
        e2els.append(o.latency)
    good = 0
    slo = cfg.get("goodput", {})
    if slo:
        checks = [(lst, slo[k] / 1000) for k, lst in (("ttft", ttfts), ("tpot", all_tpots), ("e2el", e2els)) if k in slo]
        good = sum(all(lim >= lst[j] for lst, lim in checks) for j in range(len(ok)))
    failed = [o for o in outs if not o.success]
    peak_tok, peak_conc = 0.0, 0
    if not pooling:
        if failed:
            say("Failed requests during benchmark run detected (capping to 10):")
            for i, o in enumerate(failed[:10]):
                say(f"Error {i}: {o.error}")
        if ok:
            t0 = min(o.start_time for o in ok)
            t_end = max(o.start_time + o.latency for o in ok)
            buckets = [0] * (int(math.ceil(t_end - t0)) + 1)
            for o in ok:
                t = o.start_time + o.ttft
                times = [t]
                for g in o.itl:
                    t += g
                    times.append(t)
                for t in times:
                    b = int(t - t0)
                    if 0 <= b < len(buckets):
                        buckets[b] += 1
            ev = sorted([(o.start_time, 1) for o in ok] + [(o.start_time + o.latency, -1) for o in ok])
            cur = 0
            for _, d in ev:
                cur += d
                peak_conc = max(peak_conc, cur)
            peak_tok = float(max(buckets))
            say("tip: install termplotlib and gnuplot to plot the metrics")
    total_out = sum(lens)
    mc, rate, pcts = cfg.get("max_concurrency"), cfg["request_rate"], cfg["percentiles"]
    row = lambda label, v: say("{:<40} {:<10}".format(label, v))
    rowf = lambda label, v: say("{:<40} {:<10.2f}".format(label, v))
    say("{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="))
    if cfg.get("workers"):  # the multi-process fork's first row
        row("Number of worker processes:", cfg["workers"])
    row("Successful requests:", len(ok))
    row("Failed requests:", len(failed))
    if mc is not None:
        row("Maximum request concurrency:", mc)
    if rate != float("inf"):
        rowf("Request rate configured (RPS):", rate)
    rowf("Benchmark duration (s):", dur)
    total_seqs = sum(o.num_input_sequences for o in ok)
    row("Total input tokens:", total_in)
    if not pooling and cfg["tokenizer"]:
        row("Total generated tokens:", total_out)
    rowf("Request throughput (req/s):", len(ok) / dur)
    if pooling:
        rowf("Input throughput (inputs/s):", total_seqs / dur)
    if slo and not pooling:
        rowf("Request goodput (req/s):", good / dur)
    if not pooling:
        if cfg["tokenizer"]:
            rowf("Output token throughput (tok/s):", total_out / dur)
            rowf("Peak output token throughput (tok/s):", peak_tok)
        rowf("Peak concurrent requests:", peak_conc)
    tot_tok = (total_in / dur) if pooling else (total_in + total_out) / dur
    if cfg["tokenizer"]:
        rowf("Total token throughput (tok/s):", tot_tok)
    if pooling:
        result = {"duration": dur, "completed": len(ok), "total_input_tokens": total_in,
                  "total_input_sequences": total_seqs, "request_throughput": len(ok) / dur,
                  "input_sequence_throughput": total_seqs / dur, "total_token_throughput": tot_tok,
                  "input_lens": [o.prompt_len for o in outs], "latencies": [o.latency for o in outs],
                  "queue_times": [o.client_queue_time for o in outs], "errors": [o.error for o in outs]}
    else:
        result = {"duration": dur, "completed": len(ok), "failed": len(failed),
                  "total_input_tokens": total_in, "total_output_tokens": total_out,
                  "request_throughput": len(ok) / dur, "request_goodput": good / dur if slo else None,
                  "output_throughput": total_out / dur, "total_token_throughput": tot_tok,
                  "input_lens": [o.prompt_len for o in outs], "output_lens": lens,
                  "ttfts": [o.ttft for o in outs], "itls": [o.itl for o in outs],
                  "latencies": [o.latency for o in outs], "start_times": [o.start_time for o in outs],
                  "queue_times": [o.client_queue_time for o in outs],
                  "generated_texts": [o.generated_text for o in outs], "errors": [o.error for o in outs],
                  "max_output_tokens_per_s": peak_tok, "max_concurrent_requests": peak_conc, "rtfx": 0.0}
    probe = cfg.get("probe")
    if probe:
        say("{s:{c}^{n}}".format(s="Probe Requests", n=50, c="-"))
        row("Probe requests completed:", probe["probe_completed"])
        row("Probe requests failed:", probe["probe_failed"])
        rowf("Median probe E2EL (ms):", probe["probe_median_e2el_ms"])
        rowf("P99 probe E2EL (ms):", probe["probe_p99_e2el_ms"])
        rowf("Max probe E2EL (ms):", probe["probe_max_e2el_ms"])
        result.update(probe)
    if cfg.get("rps_change_events"):
        result["rps_change_events"] = [{"rps": r, "timestamp": ts} for r, ts in cfg["rps_change_events"]]
    spec = cfg.get("spec")
    if spec:
        for k in ("acceptance_rate", "acceptance_length", "num_drafts", "draft_tokens", "accepted_tokens",
                  "per_position_acceptance_rates"):
            result["spec_decode_" + k] = spec[k]
    if cfg.get("diffusion"):
        d = cfg["diffusion"]
        result["diffusion_committed_throughput"] = d["committed_throughput"]
        result["diffusion_steps_per_canvas"] = d["steps_per_canvas"]
        result["diffusion_committed_per_step"] = d["committed_per_step"]
        result["diffusion_committed_tokens"] = int(d["committed_tokens"])
        result["diffusion_denoising_steps"] = int(d["denoising_steps"])
        result["diffusion_canvas_positions"] = int(d["canvas_positions"])
    queue = [o.client_queue_time for o in ok] if mc is not None else None
    queue_e2el = [o.latency + o.client_queue_time for o in ok] if mc is not None and rate != float("inf") else None
    sections = []
    if not pooling and cfg["tokenizer"]:
        sections += [("ttft", "TTFT", "Time to First Token", ttfts),
                     ("tpot", "TPOT", "Time per Output Token (excl. 1st token)", tpots),
                     ("itl", "ITL", "Inter-token Latency", itls)]
    sections.append(("e2el", "E2EL", "End-to-end Latency", e2els))
    if queue is not None:
        sections.append(("client_queue_time", "Client Queue Time", "Client-side Queueing", queue))
    if queue_e2el is not None:
        sections.append(("e2el_including_client_queue", "E2EL incl. Client Queue",
                         "Queue-inclusive End-to-end Latency", queue_e2el))
    for key, name, header, values in sections:
        if key not in cfg["metrics"]:
            continue
        mean, median, std, ps = stats(values, pcts)
        say("{s:{c}^{n}}".format(s=header, n=50, c="-"))
        rowf(f"Mean {name} (ms):", mean)
        rowf(f"Median {name} (ms):", median)
        result[f"mean_{key}_ms"], result[f"median_{key}_ms"], result[f"std_{key}_ms"] = mean, median, std
        for p, v in ps:
            word = str(int(p)) if int(p) == p else str(p)
            rowf(f"P{word} {name} (ms):", v)
            result[f"p{word}_{key}_ms"] = v
    diffusion = cfg.get("diffusion")
    if diffusion:
        say("{s:{c}^{n}}".format(s="Diffusion Decoding", n=50, c="-"))
        for label, key, fmt in (("Committed throughput (tok/s):", "committed_throughput", "{:<10.2f}"),
                                ("Denoising steps per canvas:", "steps_per_canvas", "{:<10.2f}"),
                                ("Committed per denoising step:", "committed_per_step", "{:<10.2f}"),
                                ("Committed tokens:", "committed_tokens", "{:<10d}"),
                                ("Denoising steps:", "denoising_steps", "{:<10d}"),
                                ("Canvas positions evaluated:", "canvas_positions", "{:<10d}")):
            value = diffusion[key]
            say("{:<40} ".format(label) + fmt.format(int(value) if fmt.endswith("d}") else value))
    elif spec:
        say("{s:{c}^{n}}".format(s="Speculative Decoding", n=50, c="-"))
        rowf("Acceptance rate (%):", spec["acceptance_rate"])
        rowf("Acceptance length:", spec["acceptance_length"])
        row("Drafts:", spec["num_drafts"])
        row("Draft tokens:", spec["draft_tokens"])
        row("Accepted tokens:", spec["accepted_tokens"])
        if spec["per_position_acceptance_rates"]:
            say("Per-position acceptance (%):")
        for i, r in enumerate(spec["per_position_acceptance_rates"]):
            rowf(f"  Position {i}:", r * 100)
    say("=" * 50)
    say("--- stderr ---")
    if not ok:
        say("UserWarning: All requests failed. This is likely due to a misconfiguration on the benchmark arguments.")

    head = {"date": "20261129-173005", "endpoint_type": cfg["backend"], "backend": cfg["backend"],
            "label": cfg.get("label"), "model_id": cfg["model"], "tokenizer_id": cfg["tokenizer"],
            "num_prompts": len(outs)}
    for item in cfg.get("metadata", []):
        k, v = item.split("=", 1)
        head[k.strip()] = v.strip()
    head["request_rate"] = rate if rate < float("inf") else "inf"
    head["burstiness"] = cfg["burstiness"]
    head["max_concurrency"] = mc
    if cfg.get("ramp_up"):
        head["ramp_up_strategy"], head["ramp_up_start_rps"], head["ramp_up_end_rps"] = cfg["ramp_up"]
    merged = {**head, **result}
    if not cfg.get("save_detailed"):
        for key in ("input_lens", "output_lens", "start_times", "ttfts", "itls", "generated_texts", "errors"):
            merged.pop(key, None)
    return "\n".join(lines) + "\n", json.dumps(merged)


CASES = {
    "generation_full": (generation_fixture, dict(
        backend="openai", label="nightly", model="meta-llama/Llama-3.1-8B-Instruct",
        tokenizer="meta-llama/Llama-3.1-8B-Instruct", request_rate=10.0, burstiness=1.0, max_concurrency=4,
        metadata=["version=0.3.3", " tp = 1 ", "backend=override", "note=a=b"],
        metrics=["ttft", "tpot", "itl", "e2el", "client_queue_time", "e2el_including_client_queue", "bogus"],
        percentiles=[50.0, 90.0, 99.0, 99.9, 12.5], save_detailed=True, goodput={"ttft": 150.0, "tpot": 25.0},
        probe={"probe_completed": 9, "probe_failed": 1, "probe_median_e2el_ms": 12.345,
               "probe_p99_e2el_ms": 40.5, "probe_max_e2el_ms": 41.0},
        spec={"acceptance_rate": 400 / 600 * 100, "acceptance_length": 3.0, "num_drafts": 200,
              "draft_tokens": 600, "accepted_tokens": 400, "per_position_acceptance_rates": [0.9, 0.0, 0.3]})),
    # The default path: the same data, no --save-detailed.
    "generation_default": (generation_fixture, dict(
        backend="openai", label="nightly", model="meta-llama/Llama-3.1-8B-Instruct",
        tokenizer="meta-llama/Llama-3.1-8B-Instruct", request_rate=float("inf"), burstiness=1.0, max_concurrency=4,
        metrics=["ttft", "tpot", "itl", "e2el", "client_queue_time", "e2el_including_client_queue", "bogus"],
        percentiles=[50.0, 90.0, 99.0, 99.9, 12.5], goodput={"ttft": 150.0, "tpot": 25.0},
        ramp_up=("linear", 1, 3),
        rps_change_events=[(1, "2026-11-29T17:30:00.123456"), (2, "2026-11-29T17:30:02.000001"),
                           (3, "2026-11-29T17:30:02.000001")])),
    "generation_long": (long_fixture, dict(
        backend="openai-chat", label="long", model="Qwen/Qwen3-0.6B", tokenizer="Qwen/Qwen3-0.6B",
        request_rate=25.0, burstiness=0.7, max_concurrency=16, metadata=["run=long", "gaps=16k"],
        metrics=["ttft", "tpot", "itl", "e2el", "client_queue_time", "e2el_including_client_queue"],
        percentiles=[0.0, 1.5, 50.0, 90.0, 99.99, 100.0], goodput={"ttft": 60.0, "e2el": 15000.0})),
    "generation_chat_detailed": (generation_fixture, dict(
        backend="openai-chat", label="chat", model="Qwen/Qwen3-0.6B", tokenizer="Qwen/Qwen3-0.6B",
        request_rate=25.0, burstiness=0.7, max_concurrency=3, metadata=["run=chat"],
        metrics=["ttft", "tpot", "itl", "e2el", "client_queue_time", "e2el_including_client_queue"],
        percentiles=[0.0, 1.5, 50.0, 90.0, 99.99, 100.0], goodput={"ttft": 150.0, "e2el": 250.0},
        save_detailed=True)),
    "generation_no_tokenizer": (generation_fixture, dict(
        backend="openai-chat", model="Qwen/Qwen3-0.6B", tokenizer=None, request_rate=float("inf"),
        burstiness=1.0, percentiles=[99.0], metrics=["ttft", "tpot", "itl"], workers=25,
        diffusion={"denoising_steps": 937.5, "canvas_positions": 32000, "committed_tokens": 2000,
                   "committed_throughput": 500.0, "steps_per_canvas": 15.0, "committed_per_step": 2000 / 937.5},
        spec={"acceptance_rate": 0.0, "acceptance_length": 0.0, "num_drafts": 1, "draft_tokens": 1,
              "accepted_tokens": 0, "per_position_acceptance_rates": []})),
    "pooling": (lambda: ([Out(True, "", 512, ttft=0.041, latency=0.041, queue=0.002, seqs=2),
                          Out(True, "", 0, ttft=0.04, latency=0.04),
                          Out(False, "Bad Request")], 4.2), dict(
        pooling=True, backend="openai-embeddings", model="BAAI/bge-m3", tokenizer="BAAI/bge-m3",
        request_rate=float("inf"), burstiness=1.0, max_concurrency=2, percentiles=[50.0, 99.0], save_detailed=True,
        metrics=["e2el", "client_queue_time", "e2el_including_client_queue"])),
    "all_failed": (lambda: ([Out(error="Never received a valid chunk to calculate TTFT."
                                       "This response will be marked as failed!"),
                             Out(error="Service Unavailable")], 1.5), dict(
        backend="vllm", model="m", tokenizer="m", request_rate=0.5, burstiness=0.5,
        percentiles=[99.0], metrics=["ttft", "tpot", "itl", "e2el"])),
}

if __name__ == "__main__":
    status = 0
    for name, (fixture, cfg) in CASES.items():
        outs, dur = fixture()
        console, result = run_case(outs, dur, cfg)
        for ext, text in ((".txt", console), (".json", result)):
            with open(name + ext, encoding="utf-8") as f:
                golden = f.read()
            if golden != text:
                status = 1
                print(f"{name}{ext} differs from Python:")
                for i, (a, b) in enumerate(zip(golden.splitlines(), text.splitlines())):
                    if a != b:
                        print(f"  line {i + 1}\n    go: {a!r}\n    py: {b!r}")
                        break
                else:
                    print(f"  lengths {len(golden)} vs {len(text)}")
    sys.exit(status)
