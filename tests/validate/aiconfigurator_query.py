"""AIConfigurator's side of tests/validate/aiconfigurator.py: run inside the Python that has the
aiconfigurator package (0.12.0), it reads a JSON list of grid points on stdin and writes each
point's estimate (TPOT or TTFT, the per-op breakdown, AIC's own memory verdict) on stdout.
It calls aiconfigurator.cli.api.cli_estimate, the function `aiconfigurator cli estimate` runs
(0.01 s a point, against 2.4 s a CLI call that reloads the database); --cli-check also runs
the CLI once and returns its printed TPOT, so the caller can hold the two to each other.
"""
import contextlib
import importlib.metadata
import io
import json
import logging
import os
import re
import subprocess
import sys

# This file's folder holds aiconfigurator.py (the caller), which would shadow the package.
sys.path = [d for d in sys.path if os.path.abspath(d or ".") != os.path.dirname(__file__)]

QUANT = {"gemm_quant_mode": "bfloat16", "kvcache_quant_mode": "bfloat16",
         "fmha_quant_mode": "bfloat16", "comm_quant_mode": "half"}


def cli_args(p):
    """The `aiconfigurator cli estimate` arguments of point `p` (what the JSON records)."""
    args = ["--model-path", p["aic_model"], "--system", p["system"], "--backend", p["backend"],
            "--perf-db-version", p["version"], "--estimate-mode", p["mode"],
            "--isl", str(p["isl"]), "--osl", str(p["osl"]), "--batch-size", str(p["batch"]),
            "--tp-size", str(p["tp"])]
    for k, v in QUANT.items():
        args += ["--" + k.replace("_", "-"), v]
    return args + ["--detail", "all"]


def estimate(p):
    from aiconfigurator.cli.api import cli_estimate
    with contextlib.redirect_stdout(io.StringIO()):  # its progress lines, not our JSON
        r = cli_estimate(p["aic_model"], p["system"], mode=p["mode"], backend_name=p["backend"],
                         backend_version=p["version"], isl=p["isl"], osl=p["osl"],
                         batch_size=p["batch"], tp_size=p["tp"], **QUANT)
    s = r.summary
    gen = p["mode"] == "static_gen"
    ops = s.get_generation_latency_dict() if gen else s.get_context_latency_dict()
    src = s.get_generation_source_dict() if gen else s.get_context_source_dict()
    out = {"ms": r.tpot if gen else r.ttft, "ops_ms": dict(ops), "op_source": dict(src),
           "memory_gib": s.get_memory().get("total"), "oom": bool(s.check_oom())}
    if out["oom"]:
        out["reason"] = r.kv_cache_warning or "AIConfigurator: does not fit in GPU memory"
    return out


def cli_tpot(cli, p):
    """The TPOT `aiconfigurator cli estimate` prints for `p` (ms, as printed: 3 decimals)."""
    r = subprocess.run([cli, "cli", "estimate"] + cli_args(p), capture_output=True, text=True)
    m = re.search(r"TPOT:\s+([0-9.]+) ms", r.stdout)
    if r.returncode != 0 or not m:
        raise SystemExit(f"aiconfigurator CLI failed ({r.returncode}): {r.stderr[-800:]}")
    return float(m.group(1))


def main():
    logging.disable(logging.WARNING)  # the database loader's notes go to stderr, not the JSON
    req = json.load(sys.stdin)
    res = {"versions": {n: importlib.metadata.version(n)
                        for n in ("aiconfigurator", "aiconfigurator-core")},
           "points": []}
    for p in req["points"]:
        res["points"].append(dict(estimate(p), command=" ".join(["aiconfigurator", "cli",
                                                                  "estimate"] + cli_args(p))))
    if req.get("cli_check"):
        p = req["cli_check"]
        res["cli_check"] = {"command": " ".join(["aiconfigurator", "cli", "estimate"] +
                                                cli_args(p)), "cli_tpot_ms": cli_tpot(
            req["cli"], p), "sdk_tpot_ms": estimate(p)["ms"]}
    json.dump(res, sys.stdout)


if __name__ == "__main__":
    main()
