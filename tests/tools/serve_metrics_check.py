#!/usr/bin/env python3
"""Recomputes a serve run's metrics from requests.jsonl with vLLM's benchmark formulas, written
here independently of tpbench's C++, and compares them with each point's `metrics`.

  ttft = first_token - arrival          tpot = (e2el - ttft) / (output_len - 1), output_len > 1
  itl  = every gap between consecutive token times of every request, pooled
  e2el = finish - arrival               duration = last finish - first arrival
  queue = admitted - arrival            ttft_admitted = first_token - admitted
  decode = finish - first_token         (vLLM's queued_time, prefill_time and decode_time)
  output_tokens_per_s = sum(output_len) / duration, total adds prompt_len,
  request_throughput = completed / duration
Percentiles by linear interpolation between closest ranks (numpy's default). Warm-up and
rejected requests are left out. Exits 1 on any difference above --tol (absolute, default 1e-9)
and prints each comparison.

Usage: serve_metrics_check.py RESULTS_DIR [--tol 1e-9]"""
import json
import math
import os
import sys


def percentile(values, q):
    v = sorted(values)
    if not v:
        return None
    pos = (len(v) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def stats(values):
    if not values:
        return None
    mean = sum(values) / len(values)
    std = math.sqrt(sum((x - mean) ** 2 for x in values) / len(values))  # numpy's, vLLM's
    return {"mean": mean, "p50": percentile(values, 50),
            "p90": percentile(values, 90), "p95": percentile(values, 95),
            "p99": percentile(values, 99), "max": max(values), "n": len(values), "std": std}


def recompute(reqs):
    done = [r for r in reqs if not r["warmup"] and not r["rejected"]]
    ttft, tpot, itl, e2el, queue, admitted, decode = [], [], [], [], [], [], []
    for r in done:
        t = r["token_s"]
        if len(t) != r["output_len"]:
            raise SystemExit(f"request {r['id']}: {len(t)} token times for output_len "
                             f"{r['output_len']} (over the log's limit? use short outputs)")
        ttft.append(r["first_token_s"] - r["arrival_s"])
        e = r["finish_s"] - r["arrival_s"]
        e2el.append(e)
        queue.append(r["admitted_s"] - r["arrival_s"])
        admitted.append(r["first_token_s"] - r["admitted_s"])
        decode.append(r["finish_s"] - r["first_token_s"])
        if r["output_len"] > 1:
            tpot.append((e - ttft[-1]) / (r["output_len"] - 1))
        itl += [b - a for a, b in zip(t, t[1:])]
    duration = max(r["finish_s"] for r in done) - min(r["arrival_s"] for r in done)
    out_tok = sum(r["output_len"] for r in done)
    in_tok = sum(r["prompt_len"] for r in done)
    return {"ttft_s": stats(ttft), "tpot_s": stats(tpot), "itl_s": stats(itl),
            "e2el_s": stats(e2el), "queue_s": stats(queue), "ttft_admitted_s": stats(admitted),
            "decode_s": stats(decode), "output_tokens_per_s": out_tok / duration,
            "total_tokens_per_s": (out_tok + in_tok) / duration,
            "request_throughput": len(done) / duration}


def compare(name, want, got, tol, bad):
    if isinstance(want, dict):
        for k, v in want.items():
            compare(f"{name}.{k}", v, (got or {}).get(k), tol, bad)
        return
    ok = got is not None and abs(want - got) <= tol
    print(f"{'ok  ' if ok else 'FAIL'} {name}: recomputed {want!r}, results {got!r}")
    if not ok:
        bad.append(name)


def main():
    args = sys.argv[1:]
    tol = 1e-9
    if "--tol" in args:
        i = args.index("--tol")
        tol = float(args[i + 1])
        del args[i:i + 2]
    folder = args[0]
    res = json.load(open(os.path.join(folder, "results.json")))
    lines = [json.loads(l) for l in open(os.path.join(folder, "requests.jsonl")) if l.strip()]
    bad = []
    for i, p in enumerate(res["points"]):
        if p["status"] != "ok":
            continue
        want = recompute([r for r in lines if r["point"] == i])
        for k, v in want.items():
            compare(f"point {i} {k}", v, p["metrics"].get(k), tol, bad)
    if bad:
        print(f"{len(bad)} mismatches")
        sys.exit(1)
    print("all serve metrics match")


if __name__ == "__main__":
    main()
