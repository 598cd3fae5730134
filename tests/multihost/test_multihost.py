#!/usr/bin/env python3
"""tpbench across hosts: two network-namespace hosts on this machine (launch/netns_hosts.sh).

Checks, each a line: a decode point whose ranks sit on two hosts (context.host_ranks, the TP
group across them, clock sync between them); the same point with one link shaped to 400 Mbit/s
(transfer share up, diagnose says slow_link and names no straggler); a slowed rank on unshaped
links (diagnose names the rank, not the link); a collectives sweep across hosts beside the same
sweep on one host; a host's link taken down mid-sweep (every process gone within timeout + 5 s,
exit 3, the host named, earlier points on disk); a rank killed on one host; and, all along, the
main interface sent nothing. Figures go to WORK/figures.json for the closing note.
Run as root: tests/multihost/test_multihost.py --tpbench build/tpbench --work DIR
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS = os.path.join(ROOT, "launch", "netns_hosts.sh")
FIGURES = {}
ORTED = shutil.which("orted")  # Open MPI 4's daemon on each host (mpirun is the one on h0)
FAILED = []


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)
    if not ok:
        FAILED.append(name)
    return ok


def sh(*args, timeout=120, check_rc=True):
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if check_rc and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: rc {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


def hosts(*args, **kw):
    return sh(HOSTS, *args, **kw)


def tpbench_across(np_, tpbench, args, timeout=180, check_rc=True):
    return hosts("mpirun", str(np_), "--", tpbench, *args, timeout=timeout, check_rc=check_rc)


def results(out):
    with open(os.path.join(out, "results.json")) as f:
        return json.load(f)


def diagnose_codes(tpbench, out, point=0):
    r = sh(tpbench, "diagnose", "--json", out)
    doc = json.loads(r.stdout)
    verdicts = doc["files"][0]["points"][point]["verdicts"]
    return {v.get("code") for v in verdicts if v.get("code")}, verdicts


MAIN_IF = os.environ.get("TPB_MAIN_IF", "eth0")  # the interface traffic would leave by


def eth0_tx():
    with open(f"/sys/class/net/{MAIN_IF}/statistics/tx_packets") as f:
        return int(f.read())


def transfer_share(point):
    ranks = point["ranks"]
    return sum(r["transfer_s"] for r in ranks) / sum(r["wall_s"] for r in ranks)


MODEL = ["--model", "tiny", "--phase", "decode", "--context", "128", "--layers", "2", "--tp", "2",
         "--steps", "40", "--warmup", "3"]
# B=32: all-reduces of 128 KB, where a 400 Mbit/s link costs a clear share of the step.
DECODE = ["run", "--batch", "32"] + MODEL


def test_decode_across(tpbench, work):
    """Decode B=1, 16 and 32 with the TP group across two hosts, beside the same on one host."""
    out, local = os.path.join(work, "decode"), os.path.join(work, "decode-one-host")
    sweep = ["sweep", "--batch", "1,16,32"] + MODEL
    tpbench_across(2, tpbench, sweep + ["--topology", "hosts-tcp", "--out", out])
    sh("mpirun", "-np", "2", "--bind-to", "core", "--mca", "pml", "ob1", "--mca", "btl",
       "self,tcp", "--mca", "btl_tcp_if_include", "lo", tpbench, *sweep, "--topology", "tcp",
       "--out", local, timeout=180)
    cmp = sh(tpbench, "compare", local, out)
    print(cmp.stdout)
    FIGURES["one_host_vs_across"] = cmp.stdout
    doc = results(out)
    ctx, p = doc["context"], doc["points"][2]  # B=32, as DECODE
    hr = ctx["host_ranks"]
    names = [h["host"] for h in hr]
    check("two hosts in context.host_ranks", len(hr) == 2 and len(set(names)) == 2
          and all(len(h["ranks"]) == 1 for h in hr), json.dumps(hr))
    check("the TP group crosses hosts", p["tp_placement"]["crosses_hosts"],
          json.dumps(p["tp_placement"]["groups"]))
    cs = p["clock_sync"]
    check("clock sync across hosts: 0 violations",
          cs["clock_condition_violations"] == 0 and cs["max_uncertainty_s"] > 0,
          f"max offset {cs['max_offset_s'] * 1e6:.1f} us, uncertainty "
          f"{cs['max_uncertainty_s'] * 1e6:.1f} us, method {cs['method']}")
    check("links recorded from the launcher", "links" in ctx and ctx["links"].get("hosts"),
          json.dumps(ctx.get("links", {}).get("hosts")))
    codes, _ = diagnose_codes(tpbench, out, point=2)
    FIGURES["unshaped"] = {"transfer_share": transfer_share(p), "codes": sorted(codes),
                           "excess": p["straggler"]["excess_compute_fraction"],
                           "step_p50_s": p["metrics"]["step_time_s"]["p50"],
                           "clock_sync": cs, "host_ranks": hr}
    return out


def shaped_attempt(tpbench, out):
    tpbench_across(2, tpbench, DECODE + ["--topology", "hosts-tcp-400m", "--out", out])
    p = results(out)["points"][0]
    codes, verdicts = diagnose_codes(tpbench, out)
    return {"out": out, "transfer_share": transfer_share(p), "codes": sorted(codes),
            "excess": p["straggler"]["excess_compute_fraction"],
            "step_p50_s": p["metrics"]["step_time_s"]["p50"],
            "link_verdict": [v["text"] for v in verdicts if v["topic"] == "link"]}


def unshaped_excess(tpbench, out):
    """Rank 1's excess compute in the decode point with the links unshaped, run now."""
    tpbench_across(2, tpbench, DECODE + ["--topology", "hosts-tcp", "--out", out])
    return results(out)["points"][0]["straggler"]["excess_compute_fraction"]


def link_made_no_straggler(a, base):
    """No straggler verdict, or no more excess compute than an unshaped run (the session's, or
    the one made right after this attempt) plus 10 points: the drift is the machine's."""
    ref = max(base["excess"], a.get("unshaped_excess_after", 0.0))
    return "straggler" not in a["codes"] or a["excess"] <= ref + 0.10


def test_shaped(tpbench, work, unshaped):
    """One link at 400 Mbit/s. At 1 Gbit/s the link's share of the step (12-13% on this VM in
    December 2026, with the tiny decode step at ~42 ms; the same check passed on faster days) sat
    under diagnose's 15% slow_link rule, so whether the check passed depended on the vCPUs'
    speed that day, the binary landed at stop 39 included. At 400 Mbit/s the 524 KB a step
    carries take ~13 ms, well clear of the rule on either side of the compute's drift. This
    machine's two vCPUs run at different speeds from run to run
    (the same decode point, unshaped, measured 3-48% excess compute on one rank), so a compute
    straggler can be real in any run. Every attempt must say slow_link with the transfer share
    up; the link must not be what makes a straggler: up to three attempts, one of them without
    a straggler verdict or with no more excess compute than an unshaped run plus 10 points. The
    unshaped run is the session's, or, after an attempt with a straggler, one made right then
    with the link cleared: a CI run once saw 25-47% excess in all three shaped attempts against
    2.4% in the session's unshaped run, and 30.6% unshaped with 8.5% shaped on a rerun."""
    base = FIGURES["unshaped"]
    attempts = []
    hosts("shape", "h1", "--rate", "400mbit")
    try:
        for k in range(3):
            a = shaped_attempt(tpbench, os.path.join(work, f"decode-400m-{k}"))
            if not link_made_no_straggler(a, base):
                hosts("shape", "h1", "--clear")
                a["unshaped_excess_after"] = unshaped_excess(
                    tpbench, os.path.join(work, f"decode-unshaped-{k}"))
                hosts("shape", "h1", "--rate", "400mbit")
            attempts.append(a)
            if link_made_no_straggler(a, base):
                break
    finally:
        hosts("shape", "h1", "--clear")
    last = attempts[-1]
    check("400 Mbit/s link: transfer share rises", all(
        a["transfer_share"] > 1.5 * base["transfer_share"] for a in attempts),
        f"{100 * base['transfer_share']:.1f}% -> "
        + ", ".join(f"{100 * a['transfer_share']:.1f}%" for a in attempts) + " of wall")
    check("400 Mbit/s link: diagnose says slow_link", all("slow_link" in a["codes"]
                                                        for a in attempts),
          " | ".join(last["link_verdict"]))
    check("400 Mbit/s link: no compute straggler from the link",
          link_made_no_straggler(last, base),
          "; ".join(f"attempt {k}: codes {a['codes']}, excess compute {100 * a['excess']:.1f}%"
                    + (f" (unshaped right after: {100 * a['unshaped_excess_after']:.1f}%)"
                       if "unshaped_excess_after" in a else "")
                    for k, a in enumerate(attempts))
          + f" (unshaped {100 * base['excess']:.1f}%)")
    cmp = sh(tpbench, "compare", unshaped, last["out"])
    print(cmp.stdout)
    FIGURES["shaped_400mbit"] = {"attempts": attempts, "compare": cmp.stdout,
                               "links": results(last["out"])["context"].get("links")}


def test_slow_rank(tpbench, work):
    """--inject slowdown on rank 1, links unshaped: diagnose names rank 1, not the link. This
    VM's vCPUs drift in speed against each other (CI once saw rank 1's 1.3x slowdown show as
    +8.3% compute and 7.9% wait, under the straggler verdict's thresholds), so up to three runs
    are made until one names the straggler; no run may blame the link."""
    attempts = []
    for k in range(3):
        out = os.path.join(work, f"decode-slow-rank-{k}")
        tpbench_across(2, tpbench, DECODE + ["--inject", "rank=1:slowdown=1.3", "--out", out])
        p = results(out)["points"][0]
        codes, verdicts = diagnose_codes(tpbench, out)
        bal = [v["text"] for v in verdicts if v["topic"] == "balance"]
        attempts.append((p, codes, bal))
        print(f"info slowed rank 1, attempt {k + 1}: codes {sorted(codes)}; {' | '.join(bal)}")
        if "straggler" in codes and p["straggler"]["rank"] == 1:
            break
    p, codes, bal = attempts[-1]
    check(f"slowed rank 1: diagnose says straggler (attempt {len(attempts)} of 3)",
          "straggler" in codes and p["straggler"]["rank"] == 1, " | ".join(bal))
    check("slowed rank 1: the link is not blamed in any attempt",
          all("slow_link" not in c for _, c, _ in attempts), str([sorted(c) for _, c, _ in attempts]))
    FIGURES["slow_rank"] = {"transfer_share": transfer_share(p), "codes": sorted(codes),
                            "straggler": p["straggler"], "attempts": len(attempts)}


def coll_table(doc):
    return {p["params"]["bytes"]: (p["metrics"]["time_s"]["mean"], p["metrics"]["busbw_GBps"])
            for p in doc["points"]}


def test_collectives(tpbench, work):
    across, local = os.path.join(work, "coll-hosts"), os.path.join(work, "coll-local")
    args = ["collectives", "-b", "4K", "-e", "4M", "-f", "4", "--iters", "30"]
    tpbench_across(2, tpbench, args + ["--out", across])
    sh("mpirun", "-np", "2", "--bind-to", "none", tpbench, *args, "--out", local, timeout=180)
    a, b = coll_table(results(across)), coll_table(results(local))
    rows = []
    for size in sorted(a):
        ta, bwa = a[size]
        tb, bwb = b.get(size, (float("nan"), float("nan")))
        rows.append(f"{size:>9} B  hosts {ta * 1e6:9.1f} us {bwa:7.3f} GB/s   one host (shm) "
                    f"{tb * 1e6:9.1f} us {bwb:7.3f} GB/s   x{ta / tb:.1f}")
    print("\n".join(rows))
    check("collectives across hosts: every size measured", len(a) == len(b) and len(a) >= 4)
    FIGURES["collectives"] = rows


def tpbench_pids(tpbench):
    return exe_pids(tpbench)


def exe_pids(exe):
    """Processes running the program at this path (None: a name on PATH that is not there)."""
    if exe is None:
        return []
    real = os.path.realpath(exe)
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if os.path.realpath(f"/proc/{d}/exe") == real:
                    pids.append(int(d))
            except OSError:
                pass
    return pids


def start_sweep(tpbench, out, extra=()):
    args = ["sweep", "--model", "tiny", "--phase", "decode", "--batch", "1,2,4,8,16,32",
            "--context", "128", "--layers", "2", "--tp", "2", "--steps", "300", "--warmup", "2",
            "--collective-timeout", "5", "--out", out, *extra]
    return subprocess.Popen([HOSTS, "mpirun", "2", "--", tpbench, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_points(out, n, proc, limit=60):
    ledger = os.path.join(out, "points.jsonl")
    t0 = time.time()
    while time.time() - t0 < limit and proc.poll() is None:
        if os.path.exists(ledger) and sum(1 for _ in open(ledger)) >= n:
            return True
        time.sleep(0.1)
    return False


def sweep_past_first_point(tpbench, out, what):
    """A sweep across the hosts once its first point is on disk; None (and a failed check) if
    it never got there."""
    proc = start_sweep(tpbench, out)
    if check(f"{what}: a first point finished", wait_for_points(out, 1, proc)):
        return proc
    proc.kill()
    return None


def test_link_down(tpbench, work):
    out = os.path.join(work, "link-down")
    proc = sweep_past_first_point(tpbench, out, "link down")
    if proc is None:
        return
    hosts("link", "h1", "down")
    t_down = time.time()
    ranks_gone = None
    try:
        while proc.poll() is None and time.time() - t_down < 60:
            if ranks_gone is None and not tpbench_pids(tpbench):
                ranks_gone = time.time() - t_down
            time.sleep(0.1)
        _, err = proc.communicate(timeout=5)
    finally:
        hosts("link", "h1", "up")
    gone = time.time() - t_down
    if ranks_gone is None:
        ranks_gone = gone
    left = tpbench_pids(tpbench)
    lines = [ln for ln in err.splitlines()
             if ln.startswith("tpbench:") and ("timed out" in ln or "stopped answering" in ln)]
    check("link down: exit 3", proc.returncode == 3, f"rc {proc.returncode}")
    check("link down: every rank gone within timeout + 5 s", ranks_gone <= 10.0,
          f"{ranks_gone:.1f} s after the link went down")
    # mpirun and the orted behind the dead link too: every process of the job, as the issue asks.
    check("link down: mpirun back within timeout + 5 s", gone <= 10.0, f"{gone:.1f} s")
    check("link down: no orted left", not exe_pids(ORTED), f"left: {exe_pids(ORTED)}")
    check("link down: no tpbench process left", not left, f"left: {left}")
    check("link down: the host that stopped answering is named",
          any("host h1 stopped answering" in ln or "host h0 stopped answering" in ln
              for ln in lines), "\n    ".join(lines[:2]))
    kept = sum(1 for _ in open(os.path.join(out, "points.jsonl")))
    check("link down: finished points kept", kept >= 1, f"{kept} on disk")
    FIGURES["link_down"] = {"rc": proc.returncode, "seconds_to_exit": gone,
                            "seconds_to_ranks_gone": ranks_gone,
                            "points_kept": kept, "report": lines[:2]}


def test_rank_killed(tpbench, work):
    out = os.path.join(work, "rank-killed")
    proc = sweep_past_first_point(tpbench, out, "rank killed")
    if proc is None:
        return
    victims = [int(p) for p in sh("ip", "netns", "pids", "h1").stdout.split()
               if int(p) in tpbench_pids(tpbench)]
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    t0 = time.time()
    proc.communicate(timeout=60)
    gone = time.time() - t0
    left = tpbench_pids(tpbench)
    check("rank killed on h1: the job ends, nonzero", bool(victims) and proc.returncode != 0,
          f"killed {victims}, rc {proc.returncode}, {gone:.1f} s")
    check("rank killed on h1: no tpbench process left", not left, f"left: {left}")
    kept = sum(1 for _ in open(os.path.join(out, "points.jsonl")))
    check("rank killed on h1: finished points kept", kept >= 1, f"{kept} on disk")
    FIGURES["rank_killed"] = {"rc": proc.returncode, "seconds_to_exit": gone, "points_kept": kept}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpbench", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    tpbench = os.path.abspath(a.tpbench)
    os.makedirs(a.work, exist_ok=True)
    tx0 = eth0_tx()
    t0 = time.time()
    hosts("down")
    hosts("up", "2")
    try:
        unshaped = test_decode_across(tpbench, a.work)
        test_shaped(tpbench, a.work, unshaped)
        test_slow_rank(tpbench, a.work)
        test_collectives(tpbench, a.work)
        test_link_down(tpbench, a.work)
        test_rank_killed(tpbench, a.work)
    finally:
        hosts("down", check_rc=False)
    tx1 = eth0_tx()
    check(f"the main interface ({MAIN_IF}) sent nothing", tx1 == tx0,
          f"tx_packets {tx0} -> {tx1}")
    FIGURES["seconds"] = time.time() - t0
    with open(os.path.join(a.work, "figures.json"), "w") as f:
        json.dump(FIGURES, f, indent=1)
    print(f"{len(FAILED)} failed" if FAILED else "all multi-host checks passed",
          f"({FIGURES['seconds']:.0f} s)")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
