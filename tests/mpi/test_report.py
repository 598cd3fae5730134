#!/usr/bin/env python3
"""`tpbench report`: report.md from results, every number read from them. A 3-point sweep with
a memory budget that batch 16 exceeds (two ok points and an oom one) and a one-point run are
reported together; the summary rows must carry the results' own step p50, MBU, MFU, ceiling
and straggler, each point its per-rank rows and its diagnosis, the oom point its status. Plots
are embedded only if they were written (matplotlib and pandas present; tests/mpi/test_plots.py checks
them), and --no-plots says so. --trace merged writes one trace of every point's: it parses, has
one process per (point, rank), and holds exactly the events of the traces the runs wrote. A document edited by hand (a metric of
another kind) is still reported, the plot that cannot read it saying why."""
import json
import os
import re

from tpbtest import Ctx


# The summary's straggler cell: the rank, or what the report says where the leads lie inside
# the clock uncertainty and the results name no rank (straggler.rank null, 1.23.0).
def rank_text(st):
    return str(st["rank"]) if st["rank"] is not None else "none (within clock uncertainty)"


def merged_trace(c, sweep, run):
    rep = c.out("report-trace")
    rc, stdout, _ = c.mpi(1, ["report", sweep, run, "--no-plots", "--trace", "merged", "--out", rep])
    c.check(rc == 0 and "trace-merged.json" in stdout, f"report --trace merged ran: {stdout}")
    with open(os.path.join(rep, "trace-merged.json")) as f:
        merged = json.load(f)
    events, procs = 0, 0
    for path in (sweep, run):
        for p in c.results(path)["points"]:
            if "trace" not in p:
                continue
            with open(os.path.join(path, p["trace"])) as f:
                t = json.load(f)["traceEvents"]
            events += len(t)
            procs += len({e["pid"] for e in t})
    pids = {e["pid"] for e in merged["traceEvents"]}
    c.check(events > 0 and len(merged["traceEvents"]) == events,
            f"merged trace: {len(merged['traceEvents'])} events, the inputs' sum {events}")
    c.check(len(pids) == procs == 3 * 2, f"merged trace: one process per (point, rank): {len(pids)} of {procs}")
    names = [e["args"]["name"] for e in merged["traceEvents"] if e.get("name") == "process_name"]
    c.check(len(names) == len(pids) and all(" point " in n and " rank " in n for n in names),
            f"merged trace: each process named by its results, point and rank: {names[:3]}")
    rc, _, err = c.mpi(1, ["report", run, "--no-plots", "--trace", "flat", "--out", rep], expect_rc=2)
    c.check("--trace" in err, f"--trace flat: exit 2 naming the option ({err.strip()[:120]})")


def edited_by_hand(c, run, made):
    """A results document with a metric that is not as tpbench writes it (edited by hand): the
    report is still written, and a plot that cannot read it says why instead of a traceback."""
    with open(os.path.join(run, "results.json")) as f:
        doc = json.load(f)
    doc["points"][0]["metrics"]["step_time_s"] = "fast"
    bad = c.out("edited")
    os.makedirs(bad, exist_ok=True)
    with open(os.path.join(bad, "results.json"), "w") as f:
        json.dump(doc, f)
    rc, _, err = c.mpi(1, ["report", bad, "--out", c.out("edited-report")])
    with open(os.path.join(c.out("edited-report"), "report.md")) as f:
        md = f.read()
    c.check(rc == 0 and "Traceback" not in err, f"an edited document: report exits 0, no traceback "
            f"({err.strip()[-200:]})")
    c.check(not made or "do not read as tpbench writes them (KeyError" in md,
            "an edited document: the plot that cannot read it says why in report.md")


def main():
    c = Ctx()
    sweep = c.out("sweep")
    c.mpi(2, ["sweep", "--model", "tiny", "--layers", "2", "--steps", "3", "--warmup", "1", "--context", "1024",
              "--memory-budget", "115M", "--batch", "1,4,16", "--out", sweep])
    run = c.out("run")
    c.mpi(2, ["run", "--model", "tiny", "--layers", "2", "--steps", "4", "--warmup", "1", "--batch", "2",
              "--context", "512", "--check", "--out", run])
    rep = c.out("report")
    rc, stdout, _ = c.mpi(1, ["report", sweep, os.path.join(run, "results.json"), "--out", rep])
    c.check(rc == 0 and "report.md" in stdout, f"report ran: {stdout}")
    with open(os.path.join(rep, "report.md")) as f:
        md = f.read()

    for path in (sweep, run):
        res = c.results(path)
        for i, p in enumerate(res["points"]):
            if p["status"] != "ok":
                c.check(re.search(rf"\| {i} \| [^|]+ \| {p['status']}: ", md) is not None,
                        f"{path} point {i}: the {p['status']} status is in the summary")
                continue
            m = p["metrics"]
            cells = [f"{m['step_time_s']['p50'] * 1e3:.3f}", f"{m['step_time_s']['p95'] * 1e3:.3f}",
                     f"{m['tokens_per_s']:.1f}", f"{m['mbu']:.3f}", f"{m['mfu']:.4f}", f"{m['mfu_ceiling']:.4f}",
                     f"rank {rank_text(p['straggler'])} ({p['straggler']['excess_compute_fraction']:+.3f})"]
            rows = [l for l in md.splitlines() if l.startswith(f"| {i} | ") and "| ok |" in l]
            c.check(any(all(f" {x} |" in l for x in cells) for l in rows),
                    f"{path} point {i}: a summary row carries {cells}")
            for r in p["ranks"]:
                c.check(f"| {r['compute_s']:.4f} | {r['wait_s']:.4f} | {r['transfer_s']:.4f} |" in md,
                        f"{path} point {i} rank {r['rank']}: compute/wait/transfer row")
        for v in res.get("diagnosis", []):
            if isinstance(v, dict) and "text" in v:
                c.check(v["text"] in md, f"{path}: diagnosis line in the report: {v['text'][:60]}")
    c.check(md.count("### Point ") == 4, f"four point sections ({md.count('### Point ')})")
    c.check("Verification against the host fp64 reference: passed" in md
            and "The sharded step against the unsharded tp=1 step: passed" in md,
            "the --check verdicts are reported")

    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    made = "Made by" in md
    c.check((len(images) >= 3) == made and all(os.path.exists(os.path.join(rep, i)) for i in images),
            f"plots embedded iff written, each file present: {images} ({'made' if made else 'not made'})")

    rep2 = c.out("report-noplots")
    c.mpi(1, ["report", run, "--out", rep2, "--no-plots"])
    with open(os.path.join(rep2, "report.md")) as f:
        md2 = f.read()
    c.check("--no-plots" in md2 and "![" not in md2 and not os.path.exists(os.path.join(rep2, "plots")),
            "--no-plots: no images, and the report says why")

    merged_trace(c, sweep, run)
    edited_by_hand(c, run, made)

    # Default --out: the first results directory.
    c.mpi(1, ["report", run, "--no-plots"])
    c.check(os.path.exists(os.path.join(run, "report.md")), "without --out, report.md lands beside results.json")

    rc, _, err = c.mpi(1, ["report", c.out("missing")], expect_rc=2)
    c.check("report:" in err and len([l for l in err.splitlines() if l.strip()]) >= 1,
            f"a missing results directory: exit 2 naming report ({err.strip()[:200]})")
    c.finish()


if __name__ == "__main__":
    main()
