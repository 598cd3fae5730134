#!/usr/bin/env python3
"""Regenerates the model backend's tables in docs/USAGE.md (issue 32: every number of the model
section comes from a script), and with --check fails when a row of the document differs.

Fabric table: Llama-3.1-70B bf16 on h100-sxm:datasheet, decode, context 2048; TP 8 over
nvlink4 and pcie5-switch (--world 8), TP 16 over ib-ndr (--world 16), batch 1 and 64. Step is
the p50 step; tokens/s per GPU the point's tokens/s over the world; the all-reduce share is the
ranks' summed all-reduce transfer time over their summed wall time.
Serve table: Llama-3.1-70B fp8 TP 8 on h100-sxm:datasheet, prompts 512, outputs 256, --chunk
512, 256 requests per load, concurrency 1..256, all 80 layers; nvlink4, nvlink4 with
--kv-budget 30000, and pcie5. Each row: the curve's free region, knee and memory wall, total (prompt and output)
tokens/s at concurrency 1, 64 and 256, and p95 ITL at 1 and 256.
Usage: tests/validate/model_tables.py [--tpbench build-cpu/tpbench] [--check docs/USAGE.md]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

FABRIC = [("nvlink4", "nvlink4", 8, "8"), ("pcie5-switch", "pcie5-switch", 8, "8"),
          ("ib-ndr (2 nodes)", "ib-ndr", 16, "16")]
SERVE = [("nvlink4", ["--topology", "nvlink4"]),
         ("nvlink4, `--kv-budget 30000`", ["--topology", "nvlink4", "--kv-budget", "30000"]),
         ("pcie5", ["--topology", "pcie5"])]
LOADS = "1,2,4,8,16,32,64,128,256"


def results(tpbench, work, args):
    out = tempfile.mkdtemp(dir=work)
    r = subprocess.run([tpbench] + args + ["--out", out, "-q"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(args)}\n{r.stderr[-1500:]}")
    with open(os.path.join(out, "results.json")) as f:
        return json.load(f)


def fabric_rows(tpbench, work):
    rows = []
    for label, topo, world, tp in FABRIC:
        doc = results(tpbench, work, [
            "sweep", "--backend", "model", "--world", str(world), "--model", "llama-3.1-70b",
            "--dtype", "bf16", "--hardware", "h100-sxm:datasheet", "--context", "2048", "--tp", tp,
            "--batch", "1,64", "--topology", topo])
        for p in doc["points"]:
            m, ranks = p["metrics"], p["ranks"]
            share = p["collectives"]["transfer_s_total"] / sum(r["wall_s"] for r in ranks)
            rows.append(f"| {label} | {tp} | {p['params']['batch']} | "
                        f"{m['step_time_s']['p50'] * 1e3:.2f} ms | "
                        f"{m['tokens_per_s'] / world:.3g} | {share * 100:.0f}% |")
    return rows


def serve_rows(tpbench, work):
    rows = []
    for label, extra in SERVE:
        doc = results(tpbench, work, [
            "serve", "--backend", "model", "--collective", "model", "--world", "8", "--tp", "8",
            "--model", "llama-3.1-70b", "--dtype", "fp8", "--hardware", "h100-sxm:datasheet",
            "--requests", "256", "--prompt-len", "512", "--output-len", "256", "--chunk", "512",
            "--concurrency", LOADS] + extra)
        by_load = {int(p["params"]["serve"]["concurrency"]): p for p in doc["points"]}
        cv = doc["curve"]
        wall = cv.get("memory_wall")
        wall_text = "none"
        if wall:
            pre = by_load[int(wall["x"])]["serve"].get("preemptions", 0)
            wall_text = f"{wall['x']:.0f} ({pre} preemptions)"
        tps = " / ".join(f"{by_load[c]['metrics']['total_tokens_per_s']:.0f}" for c in (1, 64, 256))
        itl = " / ".join(f"{by_load[c]['metrics']['itl_s']['p95'] * 1e3:.2f}" for c in (1, 256))
        rows.append(f"| {label} | {cv['free_region']['upto']:.0f} | {cv['knee']['x']:.0f} | {wall_text} | "
                    f"{tps} | {itl} ms |")
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpbench", default="build-cpu/tpbench")
    ap.add_argument("--check", help="a document whose rows must match these")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        rows = fabric_rows(a.tpbench, work) + serve_rows(a.tpbench, work)
    print("\n".join(rows))
    if a.check:
        with open(a.check) as f:
            doc = {line.strip() for line in f}
        missing = [r for r in rows if r not in doc]
        for r in missing:
            print(f"not in {a.check}: {r}")
        print(f"{len(rows) - len(missing)} of {len(rows)} rows as in {a.check}")
        sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
