#!/usr/bin/env python3
"""The device check's table (launch/device-check.sh): every point of the given results with
its MBU, MFU, ceiling and host gap, then the issue's targets, each PASS or FAIL:
- decode B=1: achieved bandwidth >= 0.80 of the copy bandwidth calibrate measured in the same
  run (MBU x the point's peak bandwidth / the measured one; the datasheet MBU is shown too);
- prefill S=4096: MFU >= 0.60 of the profile's dense peak;
- decode with --cuda-graph: host gap <= 5% of the step.
A target with no point to judge it is FAIL (nothing measured is not a pass). Exits 1 when any
target fails.
Usage: device_table.py --calibration CAL/calibration.json [--dtype bf16] RESULTS_DIR..."""
import argparse
import json
import os
import sys


def load_points(dirs):
    rows = []
    for d in dirs:
        with open(os.path.join(d, "results.json")) as f:
            doc = json.load(f)
        graph = bool(doc.get("config", {}).get("cuda_graph"))  # a run's setting, not a point's
        for p in doc["points"]:
            p["params"]["cuda_graph"] = graph
            rows.append((os.path.basename(d.rstrip("/")), p))
    return rows


def measured_copy_bw(cal, dtype):
    with open(cal) as f:
        doc = json.load(f)
    ops = doc["peaks"]["device_ops"]
    return ops[dtype]["add_GBps"] * 1e9 if dtype in ops else None


def label(p):
    q = p["params"]
    size = f"B={q['batch']} ctx={q['context']}" if q["phase"] == "decode" else f"S={q['prompt']}"
    graph = " graph" if q.get("cuda_graph") else ""
    return f"{q['model']} L{q['layers']} TP{q['tp']} {q['phase']} {size}{graph}"


def table(rows, copy_bw):
    print(f"{'set':18} {'point':44} {'status':6} {'step ms':>8} {'MBU':>5} {'MBU/copy':>8} "
          f"{'MFU':>5} {'ceil':>5} {'host gap':>8}")
    for name, p in rows:
        m = p.get("metrics") or {}
        if p["status"] != "ok":
            print(f"{name:18} {label(p):44} {p['status']:6} {p.get('reason', '')[:60]}")
            continue
        of_copy = m["mbu"] * m["peaks"]["bw"] / copy_bw if copy_bw and m.get("mbu") is not None else None
        f = lambda v, w=5: f"{v:{w}.3f}" if v is not None else f"{'-':>{w}}"
        print(f"{name:18} {label(p):44} {'ok':6} {m['step_time_s']['p50'] * 1e3:8.3f} "
              f"{f(m.get('mbu'))} {f(of_copy, 8)} {f(m.get('mfu'))} {f(m.get('mfu_ceiling'))} "
              f"{f(m.get('host_gap_fraction'), 8)}")


def targets(rows, copy_bw):
    ok = [p for _, p in rows if p["status"] == "ok"]
    dec1 = [p for p in ok if p["params"]["phase"] == "decode" and p["params"]["batch"] == 1
            and not p["params"].get("cuda_graph")]
    pre = [p for p in ok if p["params"]["phase"] == "prefill" and p["params"]["prompt"] == 4096]
    graph = [p for p in ok if p["params"]["phase"] == "decode" and p["params"].get("cuda_graph")]
    out = []
    if copy_bw:
        vals = [p["metrics"]["mbu"] * p["metrics"]["peaks"]["bw"] / copy_bw for p in dec1]
        out.append(("decode B=1 bandwidth >= 0.80 of measured copy", vals, lambda v: v >= 0.80))
    else:
        out.append(("decode B=1 bandwidth >= 0.80 of measured copy (no copy baseline)", [], None))
    out.append(("prefill S=4096 MFU >= 0.60 of dense peak", [p["metrics"]["mfu"] for p in pre],
                lambda v: v >= 0.60))
    out.append(("graph decode host gap <= 5%", [p["metrics"]["host_gap_fraction"] for p in graph],
                lambda v: v <= 0.05))
    failed = 0
    print()
    for name, vals, good in out:
        vals = [v for v in vals if v is not None]
        verdict = "PASS" if vals and good and all(good(v) for v in vals) else "FAIL"
        failed += verdict == "FAIL"
        shown = ", ".join(f"{v:.3f}" for v in vals) or "no point measured it"
        print(f"{verdict}  {name}: {shown}")
    return failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calibration", required=True)
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("results", nargs="+")
    a = ap.parse_args()
    copy_bw = measured_copy_bw(a.calibration, a.dtype)
    print(f"measured copy bandwidth ({a.dtype} add kernel, calibrate): "
          f"{copy_bw / 1e9:.1f} GB/s" if copy_bw else "no measured copy bandwidth")
    rows = load_points(a.results)
    table(rows, copy_bw)
    return 1 if targets(rows, copy_bw) else 0


if __name__ == "__main__":
    sys.exit(main())
