#!/usr/bin/env python3
"""`tpbench calibrate --from FILE --out DIR` rebuilds hardware.json from a recorded
calibration.json with no device and nothing measured: from the H200 record (tests/golden), on
this CPU build, the profile drives a model run whose results name it. A missing, malformed or
incomplete record, or a measurement option beside --from, is one line naming --from, exit 2."""
import json
import os

from tpbtest import Ctx


def main():
    c = Ctx()
    rec = os.path.join(c.source, "tests", "golden", "calibration_h200_2026-12-04.json")
    cal = c.out("from-h200")
    c.mpi(1, ["calibrate", "--from", rec, "--out", cal])
    with open(os.path.join(cal, "hardware.json")) as f:
        hw = json.load(f)
    c.check(hw["name"] == "calibrated-vm" and hw["source"].startswith(f"rebuilt by tpbench calibrate --from {rec}")
            and "on vm at 2026-12-04T16:58:10Z" in hw["source"], f"name and source: {hw['name']}, {hw['source']}")
    out = c.out("run-h200-profile")
    c.mpi(1, ["run", "--backend", "model", "--hardware", os.path.join(cal, "hardware.json"), "--model",
              "llama-3.1-8b", "--dtype", "bf16", "--batch", "1", "--context", "1024", "--out", out])
    pk = c.results(out)["points"][0]["metrics"]["peaks"]
    c.check(pk["source"] == hw["source"] and pk["flops"] == hw["peak_flops"]["bf16"],
            f"the run is judged against the rebuilt profile: {pk}")

    bad = os.path.join(c.work, "bad.json")
    with open(bad, "w") as f:
        f.write("{not json")
    incomplete = os.path.join(c.work, "incomplete.json")
    with open(rec) as f:
        d = json.load(f)
    del d["context"]["date"]
    with open(incomplete, "w") as f:
        json.dump(d, f)
    cases = [([os.path.join(c.work, "missing.json")], "--from"), ([bad], "--from"),
             ([incomplete], "context.date"), ([rec, "--op-profile", "off"], "--op-profile")]
    for extra, word in cases:
        _, _, err = c.mpi(1, ["calibrate", "--out", c.out("bad-from"), "--from"] + extra, expect_rc=2)
        lines = [ln for ln in err.splitlines() if ln.startswith("tpbench:")]
        c.check(len(lines) == 1 and "--from" in lines[0] and word in lines[0], f"{extra[-1]}: {lines}")
    c.finish()


if __name__ == "__main__":
    main()
