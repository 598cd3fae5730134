#!/usr/bin/env python3
"""Fits the constants that tests/validate/published.json names as fitted (issue 32).

One constant per fit entry, each by bisection on `tpbench --backend model` (the same prediction
published.py makes), alternating until the constants fitted together settle. First the H100 and
the TensorRT-LLM engine's first-token cost together:
  h100-sxm     achievable.kernel_overhead     <- trtllm-tput-h100-7b-b112 (a decode-dominated
                                                 static batch: the cost per kernel of a step)
  engines/trtllm-mmha prefill_overhead_s      <- trtllm-ttft-h100-7b-in128 (TTFT: the runtime's
                                                 fixed cost of a context phase)
  h100-sxm     achievable.gemm                <- trtllm-ttft-h100-7b-in2048 (TTFT)
then the A100, with that engine cost in its TensorRT-LLM entry:
  a100-sxm-80g achievable.kernel_overhead     <- gptfast-7b-tp1 (decode tokens/s; no engine)
  a100-sxm-80g achievable.gemm                <- trtllm-ttft-a100-7b-in2048 (TTFT)
then, on all of those, the engine's attention over a GQA model's cache:
  engines/trtllm-mmha gqa_decode_kv_passes    <- trtllm-tput-h100-70b-b480 (GQA, the engine's
                                                 masked MHA: one block per query head)
and, in closed form (the model is linear in the size), the custom all-reduce of
configs/topologies/nvlink4.json, each kernel's latency and P2P efficiency from two sizes:
  custom_allreduce.oneshot <- vllm-ca1-tp4-512k, vllm-ca1-tp4-4m
  custom_allreduce.twoshot <- vllm-ca2-tp4-512k, vllm-ca2-tp4-4m
  custom_allreduce.eager_copy <- sglang-vllm-ca-tp4-512 (less the one-shot kernel above)
Held-out entries are never read. Each entry is predicted at its conditions' dtypes (the H100
entries at --dtype fp8 --kv-dtype fp8: FP8 weights, bf16 activations and all-reduces, an fp8 KV
cache) and under its engine. Prints the constants; the profiles are edited by hand.
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

ENGINE = "trtllm-mmha"


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
        if kernel == "oneshot":
            fit_eager_copy(ents[EAGER_FIT], lat_us, per_byte)


EAGER_FIT = "sglang-vllm-ca-tp4-512"


def fit_eager_copy(e, lat_us, per_byte):
    """The eager call's copy: the fit entry's time less its one-shot kernel's (same kernel
    constants as the preset's) and less the copy's bytes at the preset's HBM rate."""
    assert e["role"] == "fit" and e["predict"]["algo"] == "oneshot" and e["predict"]["eager"]
    n, size = e["conditions"]["tp"], e["predict"]["bytes"]
    kernel_us = lat_us + (n - 1) * size * per_byte * 1e6
    hbm = load("topologies", "nvlink4")["model"]["custom_allreduce"]["eager_copy"]["hbm_GBps"]
    bytes_us = 2 * size / (hbm * 1e9) * 1e6
    print(f"nvlink4 custom_allreduce.eager_copy: latency_us "
          f"{e['value'] - kernel_us - bytes_us:.2f} (<- {e['id']}: {e['value']} us less the "
          f"one-shot kernel's {kernel_us:.2f} and the copy's bytes' {bytes_us:.4f})")


def load(kind, name):
    with open(os.path.join(published.ROOT, "configs", kind, name + ".json")) as f:
        return json.load(f)


class Fitter:
    """Predicts a fit entry on trial constants: each GPU's kernel overhead and GEMM fraction
    and the engine's two constants, written to temporary profiles the entry then names."""

    def __init__(self, tpbench, ents):
        self.tpbench, self.ents = tpbench, ents
        self.work = tempfile.mkdtemp(prefix="tpb-fit.")
        self.hw = {h: load("hardware", h) for h in ("h100-sxm", "a100-sxm-80g")}
        # A decode step's attention streams like any read (hbm_stream): the profile's own
        # decode_attention figure is dropped where a fit prices the step's kernels.
        self.hw["h100-sxm"]["achievable"].pop("decode_attention", None)
        self.engine = load("engines", ENGINE)
        self.k = {"h100-sxm": 0.0, "a100-sxm-80g": 0.0}
        self.g = {"h100-sxm": 0.5, "a100-sxm-80g": 0.7}

    def write(self, name, doc):
        path = os.path.join(self.work, name + ".json")
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    def pred(self, eid, **trial):
        e = copy.deepcopy(self.ents[eid])
        assert e["role"] == "fit", eid
        hw = e["predict"]["hardware"]
        prof = copy.deepcopy(self.hw[hw])
        k, g = trial.get("k", self.k[hw]), trial.get("g", self.g[hw])
        prof["achievable"]["kernel_overhead"] = {"eager_s": k, "graph_s": k, "source": "fit"}
        prof["achievable"]["gemm"] = {"points": [[2048, g]], "source": "fit"}
        e["predict"]["hardware"] = self.write(hw, prof)
        if e["predict"].get("engine") == ENGINE:
            eng = dict(self.engine)
            for key in ("prefill_overhead_s", "gqa_decode_kv_passes"):
                eng[key] = trial.get(key, eng[key])
            e["predict"]["engine"] = self.write(ENGINE, eng)
        return published.predict(self.tpbench, self.work, e)

    def solve(self, eid, key, lo, hi, hw=None):
        """The constant `key` (of `hw`, or the engine's) that predicts entry `eid` exactly."""
        e = self.ents[eid]
        # More of a cost lowers a throughput and raises a latency; a fraction does the reverse.
        rising = (e["metric"] == "ttft_ms") == (key != "g")
        x = bisect(lambda v: self.pred(eid, **{key: v}), lo, hi, e["value"], rising)
        if hw:
            getattr(self, key)[hw] = x
        else:
            self.engine[key] = x
        return x


def fit_engine_and_gpus(fit):
    h, a = "h100-sxm", "a100-sxm-80g"
    for _ in range(4):
        fit.solve("trtllm-tput-h100-7b-b112", "k", 0.0, 50e-6, h)
        fit.solve("trtllm-ttft-h100-7b-in128", "prefill_overhead_s", 0.0, 0.05)
        fit.solve("trtllm-ttft-h100-7b-in2048", "g", 0.05, 1.0, h)
    for _ in range(3):
        fit.solve("gptfast-7b-tp1", "k", 0.0, 50e-6, a)
        fit.solve("trtllm-ttft-a100-7b-in2048", "g", 0.05, 1.0, a)
    for hw in (h, a):
        print(f"{hw}: kernel_overhead {fit.k[hw] * 1e6:.2f} us, gemm {fit.g[hw]:.3f}")
    print(f"engines/{ENGINE}: prefill_overhead_s {fit.engine['prefill_overhead_s'] * 1e3:.3f} ms")
    p_id = "trtllm-tput-h100-70b-b480"
    one = fit.pred(p_id, gqa_decode_kv_passes=1.0)
    passes = fit.solve(p_id, "gqa_decode_kv_passes", 1.0, 8.0)
    print(f"engines/{ENGINE}: gqa_decode_kv_passes {passes:.3f} (<- {p_id}: one pass predicts "
          f"{one:.4g} against {fit.ents[p_id]['value']}; at the bound 1.0 the entry asks for "
          f"less than one pass and the mechanism does not explain it)")
    for eid in ("trtllm-tput-h100-7b-b112", "trtllm-ttft-h100-7b-in128",
                "trtllm-ttft-h100-7b-in2048", "gptfast-7b-tp1", "trtllm-ttft-a100-7b-in2048",
                p_id):
        print(f"  {eid}: {fit.pred(eid):.4g} against {fit.ents[eid]['value']}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpbench", default=os.path.join(published.ROOT, "build-cpu", "tpbench"))
    tpbench = os.path.abspath(ap.parse_args().tpbench)
    with open(published.CORPUS) as f:
        ents = {e["id"]: e for e in json.load(f)["entries"]}
    fit_custom(ents)
    fit_engine_and_gpus(Fitter(tpbench, ents))
    return 0


if __name__ == "__main__":
    sys.exit(main())
