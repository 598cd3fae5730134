#!/usr/bin/env python3
"""launch/device_table.py's judgements of ranks sharing one GPU (issue 54, item 2), over
made-up results whose answer is known: kernel choices equal within a group (timings aside) or
not; --inject slowdown=1.3 and host_delay=2ms on rank 1 recovered within 5% or not, or pinned
on the wrong rank; the clock conversion spread between ranks of one GPU within the reported
uncertainty or not, and null where the results carry no conversion fields."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLE = os.path.join(ROOT, "launch", "device_table.py")
CHOICE = "bf16 m=1 n=4096 k=4096: algo 66 tile 393; fastest of 8 timed candidates (#1, {} us)"


def rank(r, choices, clock=None, group=0):
    return {"rank": r, "host": "h", "device": "NVIDIA H200", "group": group, "group_rank": r,
            "kernel_choices": choices, "clock": clock or {"offset_start_s": 0.0}}


def point(ranks, inject=None, straggler=None):
    return {"params": {"model": "llama-3.1-8b", "phase": "decode", "batch": 1, "context": 1024,
                       "layers": 4, "tp": len(ranks), **({"inject": inject} if inject else {})},
            "status": "ok", "metrics": {"step_time_s": {"p50": 0.002}}, "ranks": ranks,
            "straggler": straggler or {"rank": 0, "excess_compute_fraction": 0.0}}


def table(sets):
    with tempfile.TemporaryDirectory() as d:
        for name, p in sets.items():
            os.makedirs(os.path.join(d, name))
            with open(os.path.join(d, name, "results.json"), "w") as f:
                json.dump({"config": {}, "points": [p]}, f)
        r = subprocess.run([sys.executable, TABLE, d], capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


def line(out, prefix):
    return next((x for x in out.splitlines() if x.startswith(prefix)), "")


def main():
    bad = []

    def want(cond, what, out=""):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            bad.append(what)
            print(out[-1500:])

    conv = lambda off, u: {"device_offset_s": off, "device_uncertainty_s": u}  # noqa: E731
    same = [rank(0, [CHOICE.format(45.73)], conv(1.000e-3, 2e-6)),
            rank(1, [CHOICE.format(45.89)], conv(1.000e-3 + 3e-6, 2e-6))]
    rc, out = table({"tp2-check": point(same)})
    want(line(out, "kernel choices (tp2-check): PASS"), "equal choices (timings aside) pass", out)
    want(line(out, "clock conversion (tp2-check): PASS") and "3.00 us" in out,
         "a 3 us spread within 2+2 us reported passes", out)
    differ = [rank(0, [CHOICE.format(45.7)], conv(0.0, 1e-6)),
              rank(1, [CHOICE.replace("tile 393", "tile 10").format(45.7)], conv(5e-6, 1e-6))]
    rc, out = table({"tp2-check": point(differ)})
    want(rc == 1 and line(out, "kernel choices (tp2-check): FAIL group 0 rank 1"),
         "a rank with another kernel for one shape fails the check (exit 1)", out)
    want(line(out, "clock conversion (tp2-check): FAIL"), "a 5 us spread against 2 us fails", out)
    rc, out = table({"tp2-check": point([rank(0, []), rank(1, [])])})
    want("clock conversion (tp2-check): ranks 0,1 on one GPU: null" in out,
         "no conversion fields: null, not judged", out)
    want(line(out, "kernel choices (tp2-check): none recorded"), "no choices: said, not a PASS", out)

    slow = lambda r, e: point(same, ["rank=1:slowdown=1.3"], {"rank": r, "excess_compute_fraction": e})  # noqa: E731
    delay = lambda r, x: point(same, ["rank=1:host_delay=2ms"], {  # noqa: E731
        "rank": 0, "excess_compute_fraction": 0.0, "cause": {"rank": r, "kind": "outside_ops",
                                                             "outside_ops_excess_s": x}})
    rc, out = table({"tp2-slowdown": slow(1, 0.31), "tp2-host-delay": delay(1, 0.00196)})
    want(line(out, "inject slowdown (tp2-slowdown): PASS rank 1 x1.310"), "x1.31 of x1.3 passes", out)
    want(line(out, "inject host_delay (tp2-host-delay): PASS rank 1 1.960 ms"), "1.96 of 2 ms passes", out)
    rc, out = table({"tp2-slowdown": slow(1, 0.40), "tp2-host-delay": delay(0, 0.002)})
    want(rc == 3 and line(out, "inject slowdown (tp2-slowdown): FAIL"), "x1.40 of x1.3 misses (exit 3)", out)
    want(line(out, "inject host_delay (tp2-host-delay): FAIL rank 0"), "the delay pinned on rank 0 misses", out)
    rc, out = table({"tp2-slowdown": slow(0, 0.3)})
    want(line(out, "inject slowdown (tp2-slowdown): FAIL rank 0"), "the right excess on the wrong rank misses", out)
    print("ok: the table's judgements of ranks sharing a GPU" if not bad else f"{len(bad)} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
