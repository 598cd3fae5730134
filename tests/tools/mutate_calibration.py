#!/usr/bin/env python3
"""`calibrate --from` on calibration.json files broken one field at a time: a file from another
machine must come back as a profile a model run takes (exit 0) or as one line naming what is
wrong (exit 2), never as a crash. Each try takes tests/golden's H200 calibration, sets one field
(a number, a list or an object, picked by a fixed seed) to a value of the wrong size or kind (0,
-1, 1e-300, 1e308, 2^63, a string, null, [], {}), and runs calibrate --from on it; where that
writes a profile, a decode point runs on it and must end ok or oom with a finite step.
Usage: tests/tools/mutate_calibration.py --tpbench build-cpu/tpbench [--tries 40] [--seed 1]
"""
import argparse
import copy
import json
import math
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDEN = os.path.join(ROOT, "tests", "golden", "calibration_h200_2026-12-04.json")
VALUES = [0, -1, 1e-300, 1e308, 2 ** 63, "x", None, [], {}]
# Tried first, every time: what once reached the launch plan's divisions (SIGFPE, not exit 2).
REGRESSIONS = [(("op_profile", 0, "batch"), 0), (("op_profile", 0, "batch"), 1e-300),
               (("op_profile", 2, "batch"), 2 ** 63), (("op_profile", 1, "tp"), 0)]


def fields(x, path=()):
    """Every number, list and object below the top (a list's first two items only)."""
    if isinstance(x, dict):
        for k, v in x.items():
            yield path + (k,)
            yield from fields(v, path + (k,))
    elif isinstance(x, list):
        for i, v in enumerate(x[:2]):
            if isinstance(v, (dict, list, int, float)) and not isinstance(v, bool):
                yield path + (i,)
            yield from fields(v, path + (i,))


def refused_in_one_line(p):
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    return p.returncode == 2 and len(lines) == 1 and lines[0].startswith("tpbench: error:")


def model_point_ok(tpbench, hw, out):
    p = subprocess.run([tpbench, "run", "--backend", "model", "--model", "llama-3.1-8b",
                        "--hardware", hw, "--phase", "decode", "--batch", "8", "--context", "1024",
                        "--steps", "2", "--warmup", "1", "--out", out, "-q"],
                       capture_output=True, text=True)
    if refused_in_one_line(p):
        return True, "refused"
    if p.returncode != 0:
        return False, f"model run exit {p.returncode}: {p.stderr[-200:]}"
    with open(os.path.join(out, "results.json")) as f:
        pt = json.load(f)["points"][0]
    step = pt["metrics"].get("step_time_s", {}).get("p50") if pt["status"] == "ok" else 0.0
    good = pt["status"] in ("ok", "oom") and step is not None and math.isfinite(step)
    return good, f"{pt['status']}, step {step}"


def one_try(tpbench, work, base, path, value):
    doc = copy.deepcopy(base)
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    src = os.path.join(work, "c.json")
    with open(src, "w") as f:
        json.dump(doc, f)
    out = tempfile.mkdtemp(dir=work)
    p = subprocess.run([tpbench, "calibrate", "--from", src, "--out", out],
                       capture_output=True, text=True)
    if refused_in_one_line(p):
        return True, "refused: " + p.stderr.strip()[-90:]
    if p.returncode != 0:
        return False, f"calibrate exit {p.returncode}: {p.stderr.strip()[-200:]}"
    return model_point_ok(tpbench, os.path.join(out, "hardware.json"), os.path.join(out, "run"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpbench", default=os.path.join(ROOT, "build-cpu", "tpbench"))
    ap.add_argument("--tries", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    with open(GOLDEN) as f:
        base = json.load(f)
    paths = list(fields(base))
    rng = random.Random(a.seed)
    work = tempfile.mkdtemp(prefix="tpb-mutate.")
    failed = 0
    tries = REGRESSIONS + [(rng.choice(paths), rng.choice(VALUES)) for _ in range(a.tries)]
    for path, value in tries:
        good, what = one_try(os.path.abspath(a.tpbench), work, base, path, value)
        name = ".".join(str(k) for k in path)
        print(f"{'ok  ' if good else 'FAIL'} {name} = {json.dumps(value)[:12]}: {what}")
        failed += not good
    print(f"{len(tries) - failed} of {len(tries)} broken calibrations answered with a profile or "
          "one line")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
