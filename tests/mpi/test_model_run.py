#!/usr/bin/env python3
"""`tpbench run --backend model`: virtual ranks in one process through the same analysis,
results and diagnosis as measured ranks (harness/drive/point_analysis.cc serves both).

- 8 ranks, Llama-3.1-70B TP 8 bf16 on h100-sxm/nvlink4, `--inject rank=3:slowdown=1.25`:
  every other rank's wait at each all-reduce equals 0.25 x its compute since its previous
  all-reduce, to 1e-9 s (read from trace.json), and the straggler is rank 3 with
  excess_compute_fraction 0.25 (to 1e-9).
- Two identical runs give identical points.
- `--inject mem_contend` on rank 3 at decode (every op byte-bound): straggler rank 3 at +100%
  compute, the assumed hog share named in the warnings.
- `--inject mem_reserve` against the profile's memory makes the point oom, naming need/have.
- TP 8 over pcie5-switch spends a larger share of the step in collectives than over nvlink4.
- 1024 virtual ranks (128 TP groups of 8 over ib-ndr nodes) run and every rank is in the
  results; the time is printed (the speed target is tests/bench, not here).
- A profile's efficiency table prices an op at roofline / fraction: qkv_proj at fraction 0.5
  (1 token) and 0.25 (64 tokens) costs exactly 3x its roofline at batch 16 (1/3 by log2
  interpolation), every other op is unchanged, and the point names the table's source.
- A fabric's measured all-reduce curve (what calibrate writes as topology.json) sets every
  all-reduce's transfer: log-log between its points, to 1e-12 s.
- --inject clock_offset=50 on rank 1 and clock_drift=200 on rank 2: the modelled sync reports
  the offset and the drift (200/1.0002 ppm: d offset / d local time) and undoes them: every
  rank's wait, transfer and compute equal the uninjected run's to 1e-9 s.
- --model-noise SEED:CV: the same seed gives identical points, another seed other ones, and
  ranks that were in lockstep now wait for each other (wait fraction > 0, 0 without noise)."""
import json
import os
import subprocess
import time

from tpbtest import Ctx

BASE = ["run", "--backend", "model", "--model", "llama-3.1-70b", "--dtype", "bf16",
        "--hardware", "h100-sxm", "--phase", "decode", "--context", "2048"]


def model(c, name, args, batch="16", hardware="h100-sxm"):
    out = c.out(name)
    args = ["--batch", batch] + args
    base = [hardware if k > 0 and BASE[k - 1] == "--hardware" else a for k, a in enumerate(BASE)]
    t0 = time.monotonic()
    p = subprocess.run([c.tpbench] + base + args + ["--out", out], capture_output=True, text=True,
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


def op_times(r):
    return {o["op"]: o["time_s_per_step"] for o in r["points"][0]["ops"]}


def efficiency_table(c):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "configs", "hardware", "h100-sxm.json")) as f:
        hw = json.load(f)
    hw["name"] = "h100-sxm-eff"
    hw.pop("achievable", None)  # the table against the bare roofline, as h100-sxm:datasheet
    hw["efficiency"] = {"source": "test: stated", "points": [
        {"op": "qkv_proj", "phase": "decode", "tp": 8, "tokens": 1, "fraction": 0.5},
        {"op": "qkv_proj", "phase": "decode", "tp": 8, "tokens": 64, "fraction": 0.25}]}
    os.makedirs(c.out("eff-profile"), exist_ok=True)
    path = os.path.join(c.out("eff-profile"), "hardware.json")
    with open(path, "w") as f:
        json.dump(hw, f)
    _, base, _ = model(c, "eff-base", ["--world", "8", "--tp", "8"], hardware="h100-sxm:datasheet")
    _, eff, _ = model(c, "eff", ["--world", "8", "--tp", "8"], hardware=path)
    tb, te = op_times(base), op_times(eff)
    c.check(abs(te["qkv_proj"] / tb["qkv_proj"] - 3.0) <= 1e-9,
            f"qkv_proj at fraction 1/3 of its roofline costs 3x: {te['qkv_proj'] / tb['qkv_proj']}")
    # Stamps are absolute times, so a tiny op's duration carries the clock's rounding (~1e-16 s of
    # ~1 s, against ops of ~1e-7 s): unchanged to 1e-6 of the op.
    same = [op for op in tb if op != "qkv_proj" and abs(te[op] - tb[op]) > 1e-6 * tb[op]]
    c.check(not same, f"the other ops are unchanged: {same}")
    c.check(any("test: stated" in w for w in eff["points"][0]["warnings"]),
            "the point names the efficiency table's source")


def measured_curve(c):
    # B=16 of Llama-3.1-70B bf16: 16 x 8192 x 2 = 262144 bytes per all-reduce, midway (in log)
    # between 65536 and 1048576: 100 x (400/100)^0.5 = 200 us.
    topo = {"name": "curve8", "model": {"gpus_per_node": 8, "measured": {
        "collective": "nccl", "ranks": 8, "source": "test: stated",
        "all_reduce": [[65536, 100e-6], [1048576, 400e-6]]}}}
    os.makedirs(c.out("curve-topology"), exist_ok=True)
    path = os.path.join(c.out("curve-topology"), "topology.json")
    with open(path, "w") as f:
        json.dump(topo, f)
    _, r, _ = model(c, "curve", ["--world", "8", "--tp", "8", "--topology", path])
    p = r["points"][0]
    # transfer_s_total sums every rank's share of every instance; each rank's is the whole call.
    per_call = p["collectives"]["transfer_s_total"] / (8 * p["collectives"]["count"])
    c.check(abs(per_call - 200e-6) <= 1e-12, f"every all-reduce takes the curve's 200 us: {per_call}")


def virtual_clocks(c):
    _, a, _ = model(c, "clock-none", ["--world", "8", "--tp", "8"])
    _, b, _ = model(c, "clock-skewed", ["--world", "8", "--tp", "8", "--inject", "rank=1:clock_offset=50",
                                        "--inject", "rank=2:clock_drift=200"])
    pa, pb = a["points"][0], b["points"][0]
    cs = pb["clock_sync"]
    c.check(abs(cs["max_offset_s"] - 0.05) <= 1e-9 and abs(cs["drift_ppm"] - 200 / 1.0002) <= 1e-6
            and cs["clock_condition_violations"] == 0, f"the sync sees the offset and the drift: {cs}")
    worst = max(abs(x[k] - y[k]) for x, y in zip(pa["ranks"], pb["ranks"])
                for k in ("wait_s", "transfer_s", "compute_s"))
    c.check(worst <= 1e-9, f"and undoes them: waits, transfers and compute as without ({worst:.1e} s)")


def model_noise(c):
    runs = {}
    for name, noise in (("n0", "off"), ("n7a", "7:0.1"), ("n7b", "7:0.1"), ("n8", "8:0.1")):
        _, r, _ = model(c, "noise-" + name, ["--world", "8", "--tp", "8", "--model-noise", noise])
        runs[name] = r["points"]
    same = json.dumps(runs["n7a"]) == json.dumps(runs["n7b"])
    c.check(same, "--model-noise 7:0.1 twice gives identical points")
    c.check(json.dumps(runs["n7a"]) != json.dumps(runs["n8"]), "another seed gives other points")
    w0 = runs["n0"][0]["collectives"]["wait_fraction"]
    w7 = runs["n7a"][0]["collectives"]["wait_fraction"]
    c.check(w0 == 0 and w7 > 0.01, f"noise makes ranks wait: wait fraction {w0} -> {w7:.3f}")


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

    # A hog on rank 3 at decode B=16, where every op is byte-bound on h100 (intensity 16 < 295):
    # the model's stated 2x on the byte side makes rank 3 the straggler at exactly +100%. On the
    # roofline profile (:datasheet): the fitted h100-sxm adds a fixed cost per kernel, which a
    # hog on the memory does not double.
    _, h, _ = model(c, "hog", ["--world", "8", "--tp", "8", "--inject", "rank=3:mem_contend=1"],
                    hardware="h100-sxm:datasheet")
    ph = h["points"][0]
    c.check(ph["straggler"]["rank"] == 3 and abs(ph["straggler"]["excess_compute_fraction"] - 1) <= 1e-9,
            f"mem_contend on rank 3: straggler rank 3 at +100% compute: {ph['straggler']}")
    c.check(any(w.startswith("mem_contend_modelled") for w in ph["warnings"]),
            "the point says the hog's share is assumed")

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

    efficiency_table(c)
    measured_curve(c)
    model_noise(c)
    virtual_clocks(c)

    _, big, secs = model(c, "world1024", ["--world", "1024", "--tp", "8", "--topology", "ib-ndr"])
    pb = big["points"][0]
    print(f"1024 virtual ranks: {secs:.1f} s")
    c.check(pb["status"] == "ok" and len(pb["ranks"]) == 1024, "1024 virtual ranks in the results")
    c.finish()


if __name__ == "__main__":
    main()
