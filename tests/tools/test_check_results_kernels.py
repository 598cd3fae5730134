#!/usr/bin/env python3
"""check_results.py's rule "equal kernel choices within a TP group" (issue 54): two ranks of one group
whose ranks[].kernel_choices differ (a near-tie timed apart on each rank) fail; equal ones, two groups
that differ from each other, and ranks without the field (the CPU) pass."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_results  # noqa: E402

A = "bf16 m=1 n=4096 k=14336: algo 66 tile 10 stages 35 splitk 2"
B = "bf16 m=1 n=4096 k=14336: algo 66 tile 486 stages 35 splitk 3"
ATTN = "attention: native kernels (layers/cuda/kernels)"


def point(*ranks):
    return {"params": {}, "status": "oom",
            "ranks": [dict({"rank": r, "group": g}, **({"kernel_choices": k} if k is not None else {}))
                      for r, g, k in ranks]}


def problems(p):
    out = []
    check_results.check_kernel_choices_in_groups(0, p, out)
    return out


def expect(cond, what, detail=""):
    if not cond:
        print(f"FAIL {what} {detail}")
        sys.exit(1)
    print(f"ok   {what}")


different = problems(point((0, 0, [ATTN, A]), (1, 0, [ATTN, B])))
expect(len(different) == 1, "one group, two choices: one problem", different)
expect("group 0" in different[0] and "rank 1" in different[0] and "entry 1" in different[0],
       "the problem names the group, the rank and the entry", different)
expect(problems(point((0, 0, [ATTN, A]), (1, 0, [ATTN, A]))) == [], "equal choices pass")
shorter = problems(point((0, 0, [ATTN, A]), (1, 0, [ATTN])))
expect(len(shorter) == 1 and "(none)" in shorter[0], "a rank missing a shape fails", shorter)
expect(problems(point((0, 0, [ATTN, A]), (1, 0, [ATTN, A]), (2, 1, [ATTN, B]), (3, 1, [ATTN, B]))) == [],
       "two groups may differ from each other")
expect(problems(point((0, 0, None), (1, 0, None))) == [], "ranks without kernel_choices (cpu) pass")

# The whole script on a results file: exit 1 and the rule's line.
with tempfile.TemporaryDirectory() as d:
    doc = {"schema": "tpbench.results", "schema_version": "1", "context": {}, "config": {},
           "points": [point((0, 0, [ATTN, A]), (1, 0, [ATTN, B]))]}
    with open(os.path.join(d, "results.json"), "w") as f:
        json.dump(doc, f)
    p = subprocess.run([sys.executable, os.path.join(HERE, "check_results.py"), d],
                       capture_output=True, text=True)
    expect(p.returncode == 1 and "kernel_choices differ" in p.stdout, "check_results.py exits 1 on it",
           p.stdout + p.stderr)
    doc["points"] = [point((0, 0, [ATTN, A]), (1, 0, [ATTN, A]))]
    with open(os.path.join(d, "results.json"), "w") as f:
        json.dump(doc, f)
    p = subprocess.run([sys.executable, os.path.join(HERE, "check_results.py"), d],
                       capture_output=True, text=True)
    expect(p.returncode == 0, "check_results.py passes equal choices", p.stdout + p.stderr)
