#!/usr/bin/env python3
"""`tpbench calibrate --from FILE --out DIR` rebuilds hardware.json from a recorded
calibration.json with no device and nothing measured: from the H200 record (tests/golden), on
this CPU build, the profile drives a model run whose results name it. A missing, malformed or
incomplete record, or a measurement option beside --from, is one line naming --from, exit 2.
An nccl-tests all_reduce_perf output given to --from becomes DIR/topology.json: the model
answers from its curve (the output below is written here in nccl-tests' format, its figures
made up), and a model run's results cite it."""
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
    nccl_tests(c)
    c.finish()


NCCL_TESTS = """# nccl-tests version 2.17.1 nccl-headers=22703 nccl-library=22703
# Collective test starting: {test}
# nThread 1 nGpus 1 minBytes 8 maxBytes 16777216 step: 8(factor) warmup iters: 5 iters: 20 graph: 1
# Using devices
{ranks}#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
           8             2     float     sum      -1    12.00    0.00    0.00      0    11.90    0.00    0.00      0
        4096          1024     float     sum      -1    14.00    0.29    0.44      0    13.90    0.29    0.44      0
     2097152        524288     float     sum      -1    32.00   65.54   98.30      0    31.90   65.74   98.61      0
    16777216       4194304     float     sum      -1   100.00  167.77  251.66      0    99.90  167.94  251.91      0
# Avg bus bandwidth    : 80.0
"""


def nccl_tests(c):
    ranks = "".join(f"#  Rank {r:2d} Group  0 Pid {40000 + r} on nodeA device {r:2d} [0000:{r:02x}:00] "
                    "NVIDIA H100 80GB HBM3\n" for r in range(4))
    out_file = os.path.join(c.work, "all_reduce.txt")
    with open(out_file, "w") as f:
        f.write(NCCL_TESTS.format(test="all_reduce_perf", ranks=ranks))
    top = c.out("from-nccl-tests")
    _, out, _ = c.mpi(1, ["calibrate", "--from", out_file, "--out", top])
    path = os.path.join(top, "topology.json")
    with open(path) as f:
        t = json.load(f)
    m = t["model"]["measured"]
    c.check(t["name"] == "nccl-tests-nodeA" and m["ranks"] == 4 and m["collective"] == "nccl"
            and m["all_reduce"][1] == [4096, 14e-6] and "NCCL 2.27.3" in m["source"]
            and f"--topology {path}" in out, f"topology.json: {t}; {out}")
    coll = c.out("coll-nccl-tests")
    c.mpi(1, ["collectives", "--backend", "model", "--world", "4", "--topology", path,
              "-b", "8", "-e", "16M", "-f", "8", "-J", os.path.join(coll, "nt.json"), "--out", coll])
    with open(os.path.join(coll, "nt.json")) as f:
        times = {r["size"]: r["out_of_place"]["time"] for r in json.load(f)["results"]}
    c.check(abs(times[8] - 12.0) < 1e-9 and abs(times[2097152] - 32.0) < 1e-9
            and abs(times[16777216] - 100.0) < 1e-9, f"the curve's own sizes: {times}")
    run = c.out("run-nccl-tests")
    c.mpi(1, ["run", "--backend", "model", "--world", "4", "--tp", "4", "--topology", path,
              "--model", "llama-3.1-8b", "--dtype", "bf16", "--hardware", "h100-sxm",
              "--batch", "1", "--context", "1024", "--out", run])
    doc = json.dumps(c.results(run))
    c.check(m["source"] in doc, "the run's results cite the nccl-tests output")

    gather = os.path.join(c.work, "all_gather.txt")
    with open(gather, "w") as f:
        f.write(NCCL_TESTS.format(test="all_gather_perf", ranks=ranks))
    cases = [([gather], "all_gather_perf"), ([out_file, "--runs", run], "--runs"),
             ([out_file, "--reps", "3"], "--reps")]
    for extra, word in cases:
        _, _, err = c.mpi(1, ["calibrate", "--out", c.out("bad-nt"), "--from"] + extra, expect_rc=2)
        lines = [ln for ln in err.splitlines() if ln.startswith("tpbench:")]
        c.check(len(lines) == 1 and word in lines[0], f"{extra}: {lines}")


if __name__ == "__main__":
    main()
