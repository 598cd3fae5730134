#!/usr/bin/env python3
"""The model backend's calibrate -> predict -> measure loop on this CPU (issue 11).

1. calibrate: `mpirun -np 2 tpbench calibrate` measures the peaks, the all-reduce curve
   (DIR/topology.json) and every op's fraction of its roofline in real layer steps at a grid of
   shapes (DIR/hardware.json's efficiency table: decode batch 1, 4, 16, 64; prefill 128, 512;
   each grid point 3 times, spread over the profile, the fastest kept).
2. predict: `tpbench sweep --backend model --world 2` with that profile and that fabric.
3. measure: `mpirun -np 2 tpbench sweep` of the same points on the CPU backend, --repeats times
   (fresh processes). Each run's figure is its median step time; the fastest run stands for the
   point, as calibrate keeps its fastest repeat: this VM's memory bandwidth drops by up to a
   third for seconds at a time (decode B=1 at TP 1 measured 16.4..26.5 ms across three runs).
Prints, per point, the fastest run and the spread of the runs, the predicted median step time
and its error against the fastest run, and says which points sit on the calibration grid and
which the model interpolates; at a grid point it also prints the step calibrate itself timed
(its fastest repeat), so a machine that moved between calibrating and measuring shows as a gap
between that column and the measured one rather than as a fault of the model. On-grid and
off-grid points are summarised apart; exits 1 when a point off the grid is off by more than
--tolerance (15%) or a point did not run (on-grid points are reported, not claimed).
Usage: tests/validate/cpu_loop.py [--tpbench build-cpu/tpbench] [--work DIR] [--tolerance 0.15]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

DECODE = [1, 2, 4, 8, 16, 32]
PREFILL = [128, 256, 512]
GRID = {("decode", 1), ("decode", 4), ("decode", 16), ("decode", 64), ("prefill", 128),
        ("prefill", 512)}
CONTEXT = 1024


def run(cmd):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    print("+", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return r


def points(path):
    with open(os.path.join(path, "results.json")) as f:
        doc = json.load(f)
    out = {}
    for p in doc["points"]:
        q = p["params"]
        size = q["batch"] if q["phase"] == "decode" else q["prompt"]
        out[(q["phase"], q["tp"], size)] = p["metrics"]["step_time_s"]["p50"] \
            if p["status"] == "ok" else None
    return out


def calibrated_steps(cal):
    """(phase, tp, size) -> the fastest of calibrate's repeats of that grid point's step."""
    with open(os.path.join(cal, "calibration.json")) as f:
        doc = json.load(f)
    out = {}
    for p in doc.get("op_profile", []):
        if p.get("status") != "ok":
            continue
        key = (p["phase"], p["tp"], p["batch"] if p["phase"] == "decode" else p["prompt"])
        out[key] = min(out.get(key, float("inf")), p["step_p50_s"])
    return out


def sweeps(tpbench, work, hw, topo, repeats):
    common = ["--model", "tiny", "--tp", "1,2", "--dtype", "fp32", "--hardware", hw]
    dec = ["--phase", "decode", "--batch", ",".join(map(str, DECODE)), "--context", str(CONTEXT),
           "--steps", "30", "--warmup", "3"]
    pre = ["--phase", "prefill", "--prompt", ",".join(map(str, PREFILL)), "--steps", "6",
           "--warmup", "1"]
    got = {}
    for name, axes in (("decode", dec), ("prefill", pre)):
        pred = os.path.join(work, f"model-{name}")
        run([tpbench, "sweep", "--backend", "model", "--world", "2", "--topology", topo, *common,
             *axes, "--out", pred])
        p = points(pred)
        runs = []
        for k in range(repeats):
            meas = os.path.join(work, f"measured-{name}-{k}")
            run(["mpirun", "-np", "2", "--bind-to", "core", tpbench, "sweep", *common, *axes,
                 "--out", meas])
            runs.append(points(meas))
        for key in runs[0]:
            vals = [r.get(key) for r in runs]
            got[key] = (None if None in vals else vals, p.get(key))
    return got


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpbench", default="build-cpu/tpbench")
    ap.add_argument("--work", default=None)
    ap.add_argument("--tolerance", type=float, default=0.15)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    tpbench = os.path.abspath(a.tpbench)
    work = a.work or tempfile.mkdtemp(prefix="tpb-validate.")
    cal = os.path.join(work, "calibrate")
    run(["mpirun", "-np", "2", "--bind-to", "core", tpbench, "calibrate", "--context",
         str(CONTEXT), "--out", cal])
    got = sweeps(tpbench, work, os.path.join(cal, "hardware.json"),
                 os.path.join(cal, "topology.json"), a.repeats)
    in_cal = calibrated_steps(cal)
    print(f"\n{'phase':8} {'tp':>2} {'B/S':>4}  {'fastest ms':>11} {'runs ms':>20} "
          f"{'calibrate ms':>12} {'predicted ms':>12} {'error':>7}  where")
    errs, bad = {"on the grid": [], "interpolated": []}, []
    for (phase, tp, size), (ms, p) in sorted(got.items()):
        where = "on the grid" if (phase, size) in GRID else "interpolated"
        if ms is None or p is None:
            print(f"{phase:8} {tp:>2} {size:>4}  {'-':>11} {'-':>20} {'-':>12} {'-':>12} "
                  f"{'-':>7}  not ok")
            bad.append((phase, tp, size))
            continue
        m = min(ms)
        spread = "..".join(f"{x * 1e3:.1f}" for x in (min(ms), max(ms)))
        err = p / m - 1
        errs[where].append(abs(err))
        # The claim is for points off the calibration grid only: on it the model replays what
        # calibrate timed, which says nothing of how it predicts (issue 32, item 8).
        if where == "interpolated" and abs(err) > a.tolerance:
            bad.append((phase, tp, size))
        c = in_cal.get((phase, tp, size))
        c_ms = f"{c * 1e3:12.2f}" if c else f"{'-':>12}"
        print(f"{phase:8} {tp:>2} {size:>4}  {m * 1e3:11.2f} {spread:>20} {c_ms} {p * 1e3:12.2f} "
              f"{100 * err:+6.1f}%  {where}")
    print()
    for where in ("on the grid", "interpolated"):
        e = errs[where]
        worst = f"{100 * max(e):.1f}%" if e else "-"
        print(f"{where}: {len(e)} points, worst |error| {worst}" +
              (" (reported, not claimed)" if where == "on the grid" else
               f" (the claim: tolerance {100 * a.tolerance:.0f}%)"))
    print(f"{len(bad)} off-grid or failed points outside; work in {work}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
