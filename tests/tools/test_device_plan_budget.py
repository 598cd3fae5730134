#!/usr/bin/env python3
"""The device plan against its deadline (issue 54, defect 15): replays launch/device_plan.sh's
GPU steps in order, each taking the seconds the first H200 call measured for it
(measured/h200-2026-12-04-device-check/steps.tsv) or, for a step that call did not time or
that has changed since, the plan's own STEP_ESTIMATE_S, plus 1 s a step (steps.tsv rounds to
whole seconds). peer-compile (torch.compile: 107 s on that call, limit 120 s) must start with
at least 110 s of device-check.sh's default deadline left:
- expected: every step at its measured or estimated time;
- worst: every step before peer-compile that no call has timed at its full limit (a new step
  that hangs is cut only at its limit), the timed ones at their times;
and every step must fit the deadline at its expected time. Exit 1 with the arithmetic."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STEPS_TSV = os.path.join(ROOT, "measured", "h200-2026-12-04-device-check", "steps.tsv")
NEEDED_S = 110  # peer-compile: 107 s measured
STEP_OVERHEAD_S = 1

# Sources the plan as device-check.sh does (MODE=gpu), with a step() that only prints.
PLAN = r"""
set -e
step() { printf 'step\t%s\t%s\n' "$1" "$2"; }
source "$1/launch/device_mpi.sh"
MODE=gpu TPB=/bin/false TPBM=/bin/false BUNDLE=/nonexistent R=/nonexistent
source "$1/launch/device_plan.sh"
plan_steps
for k in "${!STEP_ESTIMATE_S[@]}"; do printf 'estimate\t%s\t%s\n' "$k" "${STEP_ESTIMATE_S[$k]}"; done
"""


def plan():
    out = subprocess.run(["bash", "-c", PLAN, "plan", ROOT], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    steps, est = [], {}
    for line in out.splitlines():
        kind, name, value = line.split("\t")
        if kind == "step":
            steps.append((name, int(value)))
        else:
            est[name] = int(value)
    return steps, est


def deadline():
    with open(os.path.join(ROOT, "launch", "device-check.sh")) as f:
        return int(re.search(r"DEADLINE=\$\{TPB_DEADLINE:-(\d+)\}", f.read()).group(1))


def measured():
    with open(STEPS_TSV) as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    return {r[0]: int(r[2]) for r in rows if r[1] == "0"}


def replay(steps, seconds_of):
    """(start of each step, end of the last) with each step taking seconds_of(name, limit)."""
    t, starts = 0, {}
    for name, limit in steps:
        starts[name] = t
        t += min(seconds_of(name, limit), limit) + STEP_OVERHEAD_S
    return starts, t


def main():
    steps, est = plan()
    meas, dl = measured(), deadline()
    failures = []
    unknown = [n for n, _ in steps if n not in est and n not in meas]
    if unknown:
        failures.append(f"steps with neither a time in steps.tsv nor a STEP_ESTIMATE_S: {unknown}")
    names = [n for n, _ in steps]
    if "peer-compile" not in names:
        failures.append("no peer-compile step in the plan")
    if failures:
        print("FAIL " + "; ".join(failures))
        return 1

    def expected(n, _):
        return est.get(n, meas.get(n, 0))

    def worst(n, limit):
        return limit if n in est else meas[n]

    starts, end = replay(steps, expected)
    wstarts, _ = replay(steps, worst)
    print(f"deadline {dl} s; {len(steps)} steps; "
          + ", ".join(f"{n} {expected(n, 0)}{'e' if n in est else 'm'}" for n in names))
    left, wleft = dl - starts["peer-compile"], dl - wstarts["peer-compile"]
    print(f"peer-compile starts at {starts['peer-compile']} s expected ({left} s left), "
          f"{wstarts['peer-compile']} s worst ({wleft} s left); the plan ends at {end} s expected")
    if left < NEEDED_S:
        failures.append(f"expected: peer-compile starts with {left} s left, under {NEEDED_S}")
    if wleft < NEEDED_S:
        failures.append(f"worst: peer-compile starts with {wleft} s left, under {NEEDED_S} "
                        "(an untimed step before it runs to its limit)")
    if end > dl:
        failures.append(f"expected: the plan ends at {end} s, past the {dl} s deadline")
    print("FAIL " + "; ".join(failures) if failures else "ok: the plan fits its deadline")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
