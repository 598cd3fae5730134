#!/usr/bin/env python3
"""`tpbench run --backend model`: virtual ranks in one process through the same analysis,
results and diagnosis as measured ranks (harness/drive/point_analysis.cc serves both).

- 8 ranks, Llama-3.1-70B TP 8 bf16 on h100-sxm/nvlink4, `--inject rank=3:slowdown=1.25`:
  every other rank's wait at each all-reduce equals 0.25 x its compute since its previous
  all-reduce, to 1e-9 s (read from trace.json), and the straggler is rank 3 with
  excess_compute_fraction 0.25 (to 1e-9).
- Two identical runs give identical points.
- `--inject mem_reserve` against the profile's memory makes the point oom, naming need/have.
- TP 8 over pcie5-switch spends a larger share of the step in collectives than over nvlink4.
- 1024 virtual ranks (128 TP groups of 8 over ib-ndr nodes) run and every rank is in the
  results; the time is printed (the speed target is tests/bench, not here)."""
import json
import os
import subprocess
import time

from tpbtest import Ctx

BASE = ["run", "--backend", "model", "--model", "llama-3.1-70b", "--dtype", "bf16",
        "--hardware", "h100-sxm", "--phase", "decode", "--context", "2048"]


def model(c, name, args, batch="16"):
    out = c.out(name)
    args = ["--batch", batch] + args
    t0 = time.monotonic()
    p = subprocess.run([c.tpbench] + BASE + args + ["--out", out], capture_output=True, text=True,
                       env=c.env, timeout=300)
    c.check(p.returncode == 0, f"{name}: rc {p.returncode} {p.stderr[-800:]}")
    return out, c.results(out), time.monotonic() - t0


def waits_match_compute(c, out, straggler, factor):
    with open(os.path.join(out, "trace.json")) as f:
        ev = [e for e in json.load(f)["traceEvents"] if e["ph"] == "X" and e["tid"] in (1, 2)]
    worst, checked = 0.0, 0
    for pid in sorted({e["pid"] for e in ev}):
        if pid == straggler:
            continue
        compute = 0.0
        for e in sorted((e for e in ev if e["pid"] == pid), key=lambda e: e["ts"]):
            if e["tid"] == 1:
                compute += e["dur"]
                continue
            worst = max(worst, abs(e["args"]["wait_us"] - factor * compute) * 1e-6)
            checked += 1
            compute = 0.0
    c.check(checked > 0 and worst <= 1e-9,
            f"every other rank's wait = {factor} x its compute before the all-reduce, to 1e-9 s "
            f"({checked} instances, worst {worst:.2e} s)")


def main():
    c = Ctx()
    out, r, _ = model(c, "slow", ["--world", "8", "--tp", "8", "--inject", "rank=3:slowdown=1.25"])
    p = r["points"][0]
    c.check(p["status"] == "ok" and len(p["ranks"]) == 8, "8 virtual ranks")
    st = p["straggler"]
    c.check(st["rank"] == 3 and abs(st["excess_compute_fraction"] - 0.25) <= 1e-9,
            f"straggler rank 3, excess_compute_fraction 0.25: {st}")
    rk = {x["rank"]: x for x in p["ranks"]}
    own = rk[3]["compute_s"] - rk[3]["injected_s"]
    c.check(abs(rk[3]["injected_s"] - 0.25 * own) <= 1e-9 * own, "ranks[3].injected_s is 0.25 of its own compute")
    waits_match_compute(c, out, 3, 0.25)
    c.check_contract(out, ranks=8)
    c.check(any("modelled" in w for w in p["warnings"]), "the point says it is modelled")

    _, a, _ = model(c, "same-a", ["--world", "16", "--tp", "8", "--topology", "ib-ndr"])
    _, b, _ = model(c, "same-b", ["--world", "16", "--tp", "8", "--topology", "ib-ndr"])
    c.check(json.dumps(a["points"]) == json.dumps(b["points"]), "two identical runs give identical points")

    _, m, _ = model(c, "oom", ["--world", "8", "--tp", "8", "--inject", "rank=2:mem_reserve=70"])
    pm = m["points"][0]
    c.check(pm["status"] == "oom", f"mem_reserve=70 GiB on an 80 GB part is oom: {pm.get('reason')}")

    shares = {}
    for topo in ("nvlink4", "pcie5-switch"):
        _, t, _ = model(c, topo, ["--world", "8", "--tp", "8", "--topology", topo], batch="1")
        pt = t["points"][0]
        shares[topo] = pt["collectives"]["transfer_s_total"] / sum(x["wall_s"] for x in pt["ranks"])
    print(f"collective share of wall, TP 8 batch 1: {shares}")
    c.check(shares["pcie5-switch"] > shares["nvlink4"], "TP 8 over PCIe spends more of the step in all-reduces")

    # What-if: a sweep over TP degree and topology in one process, and `compare` across two.
    outs = {}
    for topo in ("nvlink4", "pcie5-switch"):
        outs[topo] = c.out("sweep-" + topo)
        p = subprocess.run([c.tpbench, "sweep", "--backend", "model", "--world", "8", "--model",
                            "llama-3.1-70b", "--dtype", "bf16", "--context", "2048", "--tp", "1,8",
                            "--batch", "1,64", "--topology", topo, "--out", outs[topo]],
                           capture_output=True, text=True, env=c.env, timeout=300)
        c.check(p.returncode == 0, f"sweep on {topo}: rc {p.returncode} {p.stderr[-500:]}")
        pts = c.results(outs[topo])["points"]
        status = [(x["params"]["tp"], x["params"]["batch"], x["status"]) for x in pts]
        c.check([s for *_, s in status] == ["oom", "oom", "ok", "ok"],
                f"{topo}: TP 1 does not hold 70B in 80 GB, TP 8 runs: {status}")
    p = subprocess.run([c.tpbench, "compare", outs["nvlink4"], outs["pcie5-switch"]],
                       capture_output=True, text=True, env=c.env, timeout=60)
    print(p.stdout, flush=True)
    c.check(p.returncode == 0 and "pcie5-switch" in p.stdout, f"compare runs: rc {p.returncode} {p.stderr[-300:]}")

    _, big, secs = model(c, "world1024", ["--world", "1024", "--tp", "8", "--topology", "ib-ndr"])
    pb = big["points"][0]
    print(f"1024 virtual ranks: {secs:.1f} s")
    c.check(pb["status"] == "ok" and len(pb["ranks"]) == 1024, "1024 virtual ranks in the results")
    c.finish()


if __name__ == "__main__":
    main()
