#!/usr/bin/env python3
"""The model backend against tpbench's own CUDA decode steps on one H200 (issue 32, items 2 and 4).

Measured: Llama-3.1-8B, bf16, TP 1, context 1024, decode B = 1, 8, 64, 256, p50 step, read from
the recorded results (never typed in here):
  - ../shared/measured/h200-2026-12-04/run1.tgz, 8b-decode/results.json (eager), when present;
  - measured/h200-2026-12-04-device-check/decode-eager and decode-graph/results.json.
Predicted: `tpbench sweep --backend model` with --hardware h200-sxm (tpbench's kernels: fractions
and a fixed cost per kernel, configs/hardware/h200-sxm.json) and h200-sxm:datasheet (every op at
its roofline). The H200 profile's fitted constants were fitted on the shared calibration's grid
(decode B = 1, 4, 16, 64); B = 8 and 256 are off it, and the device-check folder is a later call.
Fails (exit 1) when an off-grid point of the default profile is off by more than 15%, or when
the datasheet profile is not faster than a measured step (it must stay an upper bound).
Usage: tests/validate/h200_decode.py [--tpbench build-cpu/tpbench]
"""
import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(ROOT, "..", "shared", "measured", "h200-2026-12-04")
CHECK = os.path.join(ROOT, "measured", "h200-2026-12-04-device-check")
GRID = {1, 4, 16, 64}  # the calibration's decode batches (the fit's grid)
BATCHES = [1, 8, 64, 256]
OFF_GRID_LIMIT = 0.15


def measured_sets():
    sets = []
    tgz = os.path.join(SHARED, "run1.tgz")
    if os.path.exists(tgz):
        with tarfile.open(tgz) as t:
            sets.append(("shared run1 eager", False,
                         json.load(t.extractfile("./8b-decode/results.json"))))
    for name, graph in (("decode-eager", False), ("decode-graph", True)):
        with open(os.path.join(CHECK, name, "results.json")) as f:
            sets.append((f"device-check {name[7:]}", graph, json.load(f)))
    out = []
    for label, graph, res in sets:
        steps = {p["params"]["batch"]: p["metrics"]["step_time_s"]["p50"] for p in res["points"]
                 if p["status"] == "ok" and p["params"]["phase"] == "decode"
                 and p["params"]["context"] == 1024}
        out.append((label, graph, steps))
    return out


def predict(tpbench, work, hardware, graph):
    out = os.path.join(work, hardware.replace(":", "-") + ("-graph" if graph else ""))
    cmd = [tpbench, "sweep", "--backend", "model", "--model", "llama-3.1-8b", "--dtype", "bf16",
           "--hardware", hardware, "--world", "1", "--tp", "1", "--phase", "decode",
           "--context", "1024", "--batch", ",".join(map(str, BATCHES)), "--steps", "3",
           "--warmup", "1", "--out", out]
    if graph:
        cmd.append("--cuda-graph")
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stderr}")
    with open(os.path.join(out, "results.json")) as f:
        return {p["params"]["batch"]: p["metrics"]["step_time_s"]["p50"]
                for p in json.load(f)["points"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpbench", default="build-cpu/tpbench")
    tpbench = os.path.abspath(ap.parse_args().tpbench)
    work = tempfile.mkdtemp(prefix="tpb-h200.")
    failures, off_errors = [], []
    print(f"{'measured':<22}{'B':>5}{'grid':>6}{'meas ms':>9}{'h200 ms':>9}{'err':>8}"
          f"{'sheet ms':>10}{'err':>8}")
    for label, graph, steps in measured_sets():
        pred = predict(tpbench, work, "h200-sxm", graph)
        sheet = predict(tpbench, work, "h200-sxm:datasheet", graph)
        for b in BATCHES:
            if b not in steps:
                continue
            m, p, s = steps[b], pred[b], sheet[b]
            e, es = p / m - 1, s / m - 1
            on = "on" if b in GRID else "off"
            print(f"{label:<22}{b:>5}{on:>6}{m * 1e3:>9.2f}{p * 1e3:>9.2f}{e:>+8.1%}"
                  f"{s * 1e3:>10.2f}{es:>+8.1%}")
            if on == "off":
                off_errors.append(abs(e))
                if abs(e) > OFF_GRID_LIMIT:
                    failures.append(f"{label} B={b}: h200-sxm off by {e:+.1%}")
            if s >= m:
                failures.append(f"{label} B={b}: datasheet {s * 1e3:.2f} ms is not faster")
    print(f"off-grid: {len(off_errors)} points, worst |error| {max(off_errors):.1%}")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
