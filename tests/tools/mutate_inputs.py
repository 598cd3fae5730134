#!/usr/bin/env python3
"""The files a user hands tpbench, broken one field at a time: each must come back as a result
(exit 0) or as one line naming what is wrong (exit 2), never as a crash, a traceback or a
library's bare message (exit 1). Each try takes a good file, sets one field (a number, a string,
a list or an object, picked by a fixed seed) to a value of the wrong size or kind (0, -1, 1e-300,
1e308, 2^63, a string, null, true, [], {}), and runs the verb that reads it:
  calibration  calibrate --from (tests/golden's H200 calibration); where it writes a profile, a
               decode point runs on it and must end ok or oom with a finite step
  hardware     run --backend model --hardware FILE (tests/golden's calibrated H200 profile); the
               same check of the point
  topology     run --backend model --topology FILE (configs/topologies/nvlink4.json), TP 8
  engine       run --backend model --engine FILE (configs/engines/trtllm-mmha.json)
  results      whatif, compare, export and diagnose on a model run's results.json
  trace        whatif and report --trace merged on that run's trace.json (fields of any event)
  requests     whatif on a model serve's requests.jsonl (a field of one row)
Regressions found this way are tried first, every time.
Usage: tests/tools/mutate_inputs.py --tpbench build-cpu/tpbench [--tries 10] [--seed 1]
"""
import argparse
import copy
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VALUES = [0, -1, 1e-300, 1e308, 2 ** 63, "x", None, True, [], {}]
MODEL_RUN = ["run", "--backend", "model", "--model", "llama-3.1-8b", "--phase", "decode",
             "--batch", "8", "--context", "1024", "--steps", "2", "--warmup", "1", "-q"]
# What once crashed or spoke in the library's words: (kind, field path, value).
REGRESSIONS = [
    ("calibration", ("op_profile", 0, "batch"), 0),          # SIGFPE in the launch plan
    ("calibration", ("op_profile", 0, "batch"), 1e-300),     # cut to 0, the same
    ("calibration", ("op_profile", 2, "batch"), 2 ** 63),    # wrapped negative
    ("hardware", ("peak_flops", "bf16"), 1e-300),            # an ok point with a NaN step
    ("topology", ("model", "intra", "hw"), -1),              # json type_error, exit 1
    ("engine", ("name",), []),                               # the same
    ("results", ("points", 0, "metrics", "step_time_s"), 1e-300),  # whatif: the same
    ("trace", ("traceEvents", 0, "ph"), 0),                  # report --trace merged: MPI_Abort
    ("requests", (3, "prompt_len"), 2 ** 63),                # whatif: std::vector's length_error
    ("requests", (1, "id"), 0),                              # whatif: logic_error, exit 1
]
SERVE = ["serve", "--backend", "model", "--model", "llama-3.1-8b", "--world", "2", "--tp", "2",
         "--concurrency", "4", "--requests", "8", "--prompt-len", "64", "--output-len", "8", "-q"]


def trace_fields(trace, rng):
    """Fields of events anywhere in a trace: every key of 40 events drawn by `rng`, and of
    their args."""
    events = trace["traceEvents"]
    out = []
    for i in sorted(rng.sample(range(len(events)), min(40, len(events)))):
        out += [("traceEvents", i, k) for k in events[i]]
        out += [("traceEvents", i, "args", k) for k in events[i].get("args", {})]
    return out


def fields(x, path=()):
    """Every field below the top (a list's first two items only)."""
    items = x.items() if isinstance(x, dict) else enumerate(x[:2]) if isinstance(x, list) else []
    for k, v in items:
        yield path + (k,)
        yield from fields(v, path + (k,))


def one_line_refusal(p):
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    return (p.returncode == 2 and len(lines) == 1 and lines[0].startswith("tpbench: error:")
            and "json.exception" not in lines[0])


def point_ok(out):
    with open(os.path.join(out, "results.json")) as f:
        pt = json.load(f)["points"][0]
    step = pt["metrics"].get("step_time_s", {}).get("p50") if pt["status"] == "ok" else 0.0
    good = pt["status"] in ("ok", "oom") and step is not None and math.isfinite(step)
    return good, f"{pt['status']}, step {step}"


def run(tpbench, args):
    return subprocess.run([tpbench] + args, capture_output=True, text=True)


def answered(p, then=None):
    """(good, what) of one verb's answer; `then` checks an exit 0 further."""
    if one_line_refusal(p):
        return True, "refused: " + p.stderr.strip()[-80:]
    if p.returncode != 0:
        return False, f"exit {p.returncode}: {p.stderr.strip()[-200:]}"
    return then() if then else (True, "read")


class Kinds:
    """Each kind: its good file, and how a broken copy of it at `path` is tried in `work`."""

    def __init__(self, tpbench, work):
        self.tpbench, self.work = tpbench, work
        self.results = os.path.join(work, "good-run")
        p = run(tpbench, MODEL_RUN + ["--world", "2", "--tp", "2", "--out", self.results])
        if p.returncode != 0:
            sys.exit(f"the good run failed: {p.stderr[-500:]}")
        self.serve = os.path.join(work, "good-serve")
        p = run(tpbench, SERVE + ["--out", self.serve])
        if p.returncode != 0:
            sys.exit(f"the good serve failed: {p.stderr[-500:]}")
        self.base = {
            "calibration": os.path.join(ROOT, "tests/golden/calibration_h200_2026-12-04.json"),
            "hardware": os.path.join(ROOT, "tests/golden/hardware_h200_calibrated_2026-12-04.json"),
            "topology": os.path.join(ROOT, "configs/topologies/nvlink4.json"),
            "engine": os.path.join(ROOT, "configs/engines/trtllm-mmha.json"),
            "results": os.path.join(self.results, "results.json"),
            "trace": os.path.join(self.results, "trace.json"),
            "requests": os.path.join(self.serve, "requests.jsonl"),
        }

    def model_point(self, flags):
        out = tempfile.mkdtemp(dir=self.work)
        p = run(self.tpbench, MODEL_RUN + flags + ["--out", out])
        return answered(p, lambda: point_ok(out))

    def calibration(self, path):
        out = tempfile.mkdtemp(dir=self.work)
        p = run(self.tpbench, ["calibrate", "--from", path, "--out", out])
        return answered(p, lambda: self.model_point(["--hardware", f"{out}/hardware.json"]))

    def hardware(self, path):
        return self.model_point(["--hardware", path])

    def topology(self, path):
        return self.model_point(["--hardware", "h100-sxm", "--topology", path, "--world", "8",
                                 "--tp", "8"])

    def engine(self, path):
        return self.model_point(["--hardware", "h100-sxm", "--engine", path])

    def run_copy(self, name, path, good=None):
        """A copy of the good run's directory (or `good`) with `path` in place of its file
        `name`."""
        good = good or self.results
        d = tempfile.mkdtemp(dir=self.work)
        for f in os.listdir(good):
            if f != name:
                src = os.path.join(good, f)
                (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, os.path.join(d, f))
        shutil.copy(path, os.path.join(d, name))
        return d

    def verbs(self, runs):
        for args in runs:
            good, what = answered(run(self.tpbench, args))
            if not good:
                return False, f"{args[0]}: {what}"
        return True, "read by " + ", ".join(args[0] for args in runs)

    def results_(self, path):
        d = self.run_copy("results.json", path)
        return self.verbs([["whatif", d], ["compare", self.base["results"], d],
                           ["export", d, "--format", "csv"], ["diagnose", d]])

    def trace(self, path):
        d = self.run_copy("trace.json", path)
        return self.verbs([["whatif", d], ["report", d, "--trace", "merged", "--no-plots",
                                           "--out", os.path.join(d, "report")]])

    def requests(self, path):
        return self.verbs([["whatif", self.run_copy("requests.jsonl", path, self.serve)]])

    def tried(self, kind, path, value):
        with open(self.base[kind]) as f:
            doc = [json.loads(line) for line in f] if kind == "requests" else json.load(f)
        node = doc
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
        src = os.path.join(self.work, f"{kind}.json")
        with open(src, "w") as f:
            if kind == "requests":
                f.writelines(json.dumps(row) + "\n" for row in doc)
            else:
                json.dump(doc, f)
        return getattr(self, kind if kind != "results" else "results_")(src)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpbench", default=os.path.join(ROOT, "build-cpu", "tpbench"))
    ap.add_argument("--tries", type=int, default=10, help="random tries per kind")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="tpb-mutate.")
    kinds = Kinds(os.path.abspath(a.tpbench), work)
    rng = random.Random(a.seed)
    tries = list(REGRESSIONS)
    for kind, src in kinds.base.items():
        with open(src) as f:
            doc = [json.loads(line) for line in f] if kind == "requests" else json.load(f)
        if kind == "requests":
            paths = [(i, k) for i in range(len(doc)) for k in doc[i]]
        else:
            paths = trace_fields(doc, rng) if kind == "trace" else list(fields(doc))
        tries += [(kind, rng.choice(paths), rng.choice(VALUES)) for _ in range(a.tries)]
    failed = 0
    for kind, path, value in tries:
        good, what = kinds.tried(kind, path, value)
        name = ".".join(str(k) for k in path)
        print(f"{'ok  ' if good else 'FAIL'} {kind} {name} = {json.dumps(value)[:12]}: {what}")
        failed += not good
    print(f"{len(tries) - failed} of {len(tries)} broken files answered with a result or one line")
    shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
