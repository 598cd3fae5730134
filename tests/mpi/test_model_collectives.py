#!/usr/bin/env python3
"""`tpbench collectives --backend model`: NCCL's tuning model on virtual ranks in one process
(no mpirun). Checked against published nccl-tests figures, 8x H100 NVLink, 1 GiB all-reduce:
  - ring: busbw ~370 GB/s (nccl-tests issue 212, a maintainer) -- predicted from NCCL's own
    per-link NVLink figure (20.6 GB/s x 18 links), not fitted;
  - NVLS: busbw ~480 GB/s (same source) -- the nvlink4 preset's NVLS efficiency is FITTED to
    it, so this row checks the plumbing only.
Also: the results pass check_results.py, two identical runs give identical points, and a
1024-rank group across 128 ib-ndr nodes runs."""
import json
import os
import subprocess

from tpbtest import Ctx


def model(c, name, args):
    out = c.out(name)
    p = subprocess.run([c.tpbench, "collectives", "--backend", "model", "--out", out] + args,
                       capture_output=True, text=True, env=c.env, timeout=120)
    c.check(p.returncode == 0, f"{name}: rc {p.returncode} {p.stderr[-500:]}")
    print(p.stdout, flush=True)
    return out, c.results(out)


def main():
    c = Ctx()
    for algo, want in (("ring", 370.0), ("nvls", 480.0)):
        out, r = model(c, algo, ["--world", "8", "--topology", "nvlink4", "-b", "1G", "-e", "1G",
                                 "--algo", algo])
        p = r["points"][0]
        bw = p["metrics"]["busbw_GBps"]
        c.check(abs(bw - want) <= 0.10 * want, f"--algo {algo}: busbw {bw:.1f} GB/s within 10% of {want:.0f}")
        c.check(p["params"]["model"]["algo"] == algo, f"--algo {algo} is what ran")
        c.check(p["ranks"][0]["wait_s"] == 0 and len(p["ranks"]) == 8, "8 virtual ranks, no wait")
        c.check_contract(out, ranks=8)
        c.check(r["context"]["fabric"]["nvlink4"]["name"] == "nvlink4", "the fabric's preset is in the context")
    _, a = model(c, "same-a", ["--world", "16", "--topology", "ib-ndr", "-b", "8", "-e", "1G", "-f", "8"])
    _, b = model(c, "same-b", ["--world", "16", "--topology", "ib-ndr", "-b", "8", "-e", "1G", "-f", "8"])
    c.check(json.dumps(a["points"]) == json.dumps(b["points"]), "two identical runs give identical points")
    algos = [p["params"]["model"]["algo"] + "/" + p["params"]["model"]["protocol"] for p in a["points"]]
    c.check(algos[0].endswith("LL") and algos[-1] != algos[0],
            f"auto picks a low-latency protocol for small messages and another for large: {algos}")
    _, big = model(c, "world1024", ["--world", "1024", "--topology", "ib-ndr", "-b", "256M", "-e", "256M"])
    p = big["points"][0]
    c.check(len(p["ranks"]) == 1024 and p["params"]["model"]["nodes"] == 128,
            "1024 virtual ranks on 128 nodes")
    c.finish()


if __name__ == "__main__":
    main()
