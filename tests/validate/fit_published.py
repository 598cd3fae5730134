#!/usr/bin/env python3
"""Fits the profile constants that tests/validate/published.json names as fitted (issue 32).

One constant per fit entry, each by bisection on `tpbench --backend model` (the same prediction
published.py makes), alternating until both constants of a GPU settle:
  a100-sxm-80g achievable.kernel_overhead  <- gptfast-7b-tp1 (decode tokens/s)
  a100-sxm-80g achievable.gemm             <- trtllm-ttft-a100-7b-in2048 (TTFT)
  h100-sxm     achievable.kernel_overhead  <- trtllm-ttft-h100-7b-in128 (TTFT)
  h100-sxm     achievable.gemm             <- trtllm-ttft-h100-7b-in2048 (TTFT)
and, in closed form (the model is linear in the size), the custom all-reduce of
configs/topologies/nvlink4.json, each kernel's latency and P2P efficiency from two sizes:
  custom_allreduce.oneshot <- vllm-ca1-tp4-512k, vllm-ca1-tp4-4m
  custom_allreduce.twoshot <- vllm-ca2-tp4-512k, vllm-ca2-tp4-4m
Held-out entries are never read. Each entry is predicted at its conditions' dtypes (the H100
entries at --dtype fp8 --kv-dtype fp8: FP8 weights, bf16 activations and all-reduces, an fp8 KV
cache; refitted so when the dtypes were separated). Prints the constants; the profiles are
edited by hand.
Usage: tests/validate/fit_published.py [--tpbench build-cpu/tpbench]
"""
import argparse
import copy
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import published  # noqa: E402

FITS = {"a100-sxm-80g": ("gptfast-7b-tp1", "trtllm-ttft-a100-7b-in2048"),
        "h100-sxm": ("trtllm-ttft-h100-7b-in128", "trtllm-ttft-h100-7b-in2048")}


def bisect(f, lo, hi, target, rising):
    """x in [lo, hi] with f(x) = target; rising: f grows with x."""
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if (f(mid) < target) == rising:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


CUSTOM = {"oneshot": ("vllm-ca1-tp4-512k", "vllm-ca1-tp4-4m"),
          "twoshot": ("vllm-ca2-tp4-512k", "vllm-ca2-tp4-4m")}


def fit_custom(ents):
    """The custom all-reduce's constants: time = latency + f x bytes / (line x efficiency), f the
    bytes each rank reads from peers per byte of message (one-shot n - 1, two-shot
    2 (n - 1) / n), two fit entries per kernel."""
    with open(os.path.join(published.ROOT, "configs", "topologies", "nvlink4.json")) as f:
        line = json.load(f)["model"]["intra"]["line_GBps"] * 1e9
    for kernel, (a_id, b_id) in CUSTOM.items():
        a, b = ents[a_id], ents[b_id]
        assert a["role"] == "fit" and b["role"] == "fit"
        n = a["conditions"]["tp"]
        assert b["conditions"]["tp"] == n and a["predict"]["algo"] == kernel
        reads = n - 1 if kernel == "oneshot" else 2 * (n - 1) / n
        (s1, t1), (s2, t2) = [(e["predict"]["bytes"], e["value"] * 1e-6) for e in (a, b)]
        per_byte = (t2 - t1) / (reads * (s2 - s1))
        lat_us = (t1 - reads * s1 * per_byte) * 1e6
        print(f"nvlink4 custom_allreduce.{kernel}: latency_us {lat_us:.2f}, "
              f"p2p_efficiency {1 / per_byte / line:.4f} (<- {a_id}, {b_id})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpbench", default=os.path.join(published.ROOT, "build-cpu", "tpbench"))
    tpbench = os.path.abspath(ap.parse_args().tpbench)
    with open(published.CORPUS) as f:
        ents = {e["id"]: e for e in json.load(f)["entries"]}
    fit_custom(ents)
    work = tempfile.mkdtemp(prefix="tpb-fit.")
    for hw, (k_id, g_id) in FITS.items():
        assert ents[k_id]["role"] == "fit" and ents[g_id]["role"] == "fit"
        with open(os.path.join(published.ROOT, "configs", "hardware", hw + ".json")) as f:
            base = json.load(f)
        state = {"k": 0.0, "g": 1.0}

        def pred(eid, k, g):
            prof = copy.deepcopy(base)
            prof["achievable"]["kernel_overhead"] = {"eager_s": k, "graph_s": k, "source": "fit"}
            prof["achievable"]["gemm"] = {"points": [[2048, g]], "source": "fit"}
            path = os.path.join(work, f"{hw}.json")
            with open(path, "w") as f:
                json.dump(prof, f)
            e = copy.deepcopy(ents[eid])
            e["predict"]["hardware"] = path
            return published.predict(tpbench, work, e)

        for _ in range(3):
            state["k"] = bisect(lambda k: pred(k_id, k, state["g"]), 0.0, 50e-6,
                                ents[k_id]["value"],
                                rising=ents[k_id]["metric"] == "ttft_ms")
            state["g"] = bisect(lambda g: pred(g_id, state["k"], g), 0.05, 1.0,
                                ents[g_id]["value"], rising=False)
        print(f"{hw}: kernel_overhead {state['k'] * 1e6:.2f} us (<- {k_id}: "
              f"{pred(k_id, state['k'], state['g']):.4g}), gemm {state['g']:.3f} (<- {g_id}: "
              f"{pred(g_id, state['k'], state['g']):.4g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
