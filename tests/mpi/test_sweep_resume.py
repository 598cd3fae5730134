#!/usr/bin/env python3
"""tpbench sweep, killed and resumed: a 5-point batch sweep on 2 ranks is SIGKILLed (mpirun's
whole session) while point 3 runs, then `--resume DIR` finishes it. The result must hold the
5 points once each, in sweep order, with the first two ledger lines byte-identical to what the
killed run wrote, and a valid results.json (written atomically, so never torn)."""
import json
import os
import signal
import subprocess
import time

from tpbtest import Ctx

BATCHES = [1, 2, 4, 8, 16]
# Short points (2 layers, few steps) that still take long enough to be caught mid-point.
ARGS = ["sweep", "--model", "tiny", "--layers", "2", "--steps", "8", "--warmup", "1",
        "--batch", ",".join(map(str, BATCHES))]


def ledger(out):
    path = os.path.join(out, "points.jsonl")
    if not os.path.exists(path):
        return b""
    with open(path, "rb") as f:
        return f.read()


def kill_session(p):
    """SIGKILL mpirun's process group, then anything else left in its session (Open MPI puts
    each rank in its own process group, so the group alone may not reach them)."""
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    deadline = time.time() + 10
    while time.time() < deadline:
        left = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if os.getsid(int(pid)) == p.pid:
                    left.append(int(pid))
            except OSError:
                pass
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.1)


def main():
    c = Ctx()
    out = c.out("sweep")
    cmd = [c.mpirun, "-np", "2", "--oversubscribe", "--bind-to", "none", c.tpbench] + ARGS + ["--out", out]
    p = subprocess.Popen(cmd, env=c.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True)
    # Two finished lines mean point 3 is running: kill right then.
    deadline = time.time() + 240
    while ledger(out).count(b"\n") < 2 and p.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    killed_at = ledger(out).count(b"\n")
    finished_early = p.poll() is not None
    kill_session(p)
    c.check(not finished_early, "the first sweep was still running when killed")
    c.check(killed_at == 2, f"killed during point 3 (ledger had {killed_at} lines)")
    before = ledger(out)
    first_two = before.split(b"\n")[:2]

    rc, stdout, stderr = c.mpi(2, ARGS + ["--resume", out], timeout=300)
    c.check("2 finished point(s) kept" in stdout, "resume reports the kept points")
    c.check("[sweep 3/5]" in stderr and "ETA" in stderr,
            "progress lines (on stderr) count k/N with an ETA")
    c.check("[sweep" not in stdout, "no progress line on stdout")
    c.check("[sweep 1/5]" not in stderr, "finished points are not run again")
    after = ledger(out)
    lines = after.split(b"\n")
    c.check(lines[:2] == first_two, "first two ledger lines are byte-identical after resume")
    recs = [json.loads(l) for l in lines if l.strip()]
    c.check([r["params"]["batch"] for r in recs] == BATCHES,
            f"ledger holds each batch once, in order: {[r['params']['batch'] for r in recs]}")
    res = c.results(out)
    batches = [p["params"]["batch"] for p in res["points"]]
    c.check(batches == BATCHES, f"results.json holds 5 points, no duplicates: {batches}")
    c.check(all(p["status"] == "ok" for p in res["points"]), "every point ok")
    c.check(json.dumps(res["points"][0], sort_keys=True) == json.dumps(recs[0], sort_keys=True),
            "results.json point 1 equals its ledger record")
    c.check(res["config"]["sweep"]["points"] == 5 and res["config"]["batch"] == BATCHES,
            "config records the sweep's axes")
    c.check_contract(out, ranks=2)

    # A torn tail (a write cut by a kill) is dropped, and that point runs again.
    with open(os.path.join(out, "points.jsonl"), "wb") as f:
        f.write(b"\n".join(lines[:4]) + b"\n" + lines[4][: len(lines[4]) // 2])
    rc, stdout, _ = c.mpi(2, ARGS + ["--resume", out], timeout=300)
    c.check("1 torn line(s) dropped" in stdout, "a torn last line is reported and dropped")
    res = c.results(out)
    c.check([p["params"]["batch"] for p in res["points"]] == BATCHES,
            "after a torn tail the sweep again ends with the 5 points once each")
    c.finish()


if __name__ == "__main__":
    main()
