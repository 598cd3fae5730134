#!/usr/bin/env python3
"""check_results.py's straggler rule: a straggler is named only where its lead exceeds the clock
uncertainty. Golden results (tests/golden/results_run.json) given a 9.8 us uncertainty (two ranks
at +-4.9 us, the H200's one bracket), then a lead inside it, outside it, and no rank named."""
import copy, json, os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "check_results.py")
GOLDEN = os.path.join(HERE, "..", "golden", "results_run.json")


def run(doc):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "results.json"), "w") as f:
            json.dump(doc, f)
        p = subprocess.run([sys.executable, CHECK, d], capture_output=True, text=True)
    return p.returncode, p.stdout


def with_straggler(base, **fields):
    doc = copy.deepcopy(base)
    for p in doc["points"]:
        if p.get("status") == "ok":
            p["collectives"]["skew_uncertainty_s"] = 9.8e-6
            p["straggler"].update(fields)
    return doc


def main():
    base = json.load(open(GOLDEN))
    rc, out = run(base)
    failures = []
    if rc != 0:
        failures.append(f"the golden results fail before any change: {out}")
    cases = [
        ("a lead inside the uncertainty", dict(rank=1, arrived_last_share=1.0, lead_s=4e-6), False),
        ("a lead equal to it", dict(rank=1, arrived_last_share=1.0, lead_s=9.8e-6), False),
        ("a named rank without a lead", dict(rank=1, arrived_last_share=1.0), False),
        ("a lead outside it", dict(rank=1, arrived_last_share=1.0, lead_s=30e-6), True),
        ("no rank, with the reason", dict(rank=None, reason="within clock uncertainty (±9.8 us)"), True),
        ("no rank, without a reason", dict(rank=None), False),
        ("rank absent, with the reason (as tpbench writes it)",
         dict(rank="absent", reason="within clock uncertainty (±9.8 us)"), True),
        ("rank absent, without a reason", dict(rank="absent"), False),
    ]
    for name, fields, ok in cases:
        doc = with_straggler(base, **fields)
        for p in doc["points"]:
            st = p.get("straggler", {})
            if "lead_s" not in fields:
                st.pop("lead_s", None)
            if st.get("rank") == "absent":
                del st["rank"]
        rc, out = run(doc)
        flagged = rc != 0 and "straggler" in out
        if flagged == ok:
            failures.append(f"{name}: {'flagged' if flagged else 'passed'} ({out.strip()})")
        print(f"{'ok' if flagged != ok else 'FAIL'}: {name}: rc {rc}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
