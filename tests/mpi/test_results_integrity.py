"""Results never lost or torn for `tpbench run`: SIGKILL the job from outside
at chosen moments and check what is on disk.

What it shows:
- results.json appears as soon as setup succeeds (context + resolved config, zero points), so a
  run killed mid-point still leaves a parseable, tool-readable record of what was being run;
- a kill at any moment never leaves a torn results.json (temp file + rename): the file is
  either absent (killed before setup finished) or valid JSON with the contract's top level;
- points.jsonl only ever holds whole lines, at most one point ahead of results.json (it is
  appended and fsynced before results.json is rewritten);
- after SIGKILL of mpirun's session, or of one rank, every rank is gone within seconds;
- a rank that crashes (SIGSEGV) in the middle of a sweep ends the job with a non-zero code, and
  every point finished before the crash is still in points.jsonl and results.json;
- a second run into the same --out moves the first run's files to previous-<time>/ instead of
  appending to them.
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tpbtest import Ctx  # noqa: E402

TOP_LEVEL = ("schema", "schema_version", "context", "config", "points")
GONE_WITHIN_S = 10.0


def launch(ctx, out, args, np=2):
    cmd = [ctx.mpirun, "-np", str(np), "--oversubscribe", "--bind-to", "none", ctx.tpbench,
           "run", "--out", out] + args
    # Own session: the test can signal mpirun's whole group without touching anything else.
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=ctx.env, start_new_session=True)


def rank_pids(ctx, out):
    """(pid, world rank) of the live tpbench ranks writing to `out`. Open MPI gives each rank
    its own process group, so they are found by command line, not by mpirun's group."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{d}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            if state == "Z" or not argv or os.path.basename(argv[0]) != b"tpbench":
                continue
            if out.encode() not in argv:
                continue
            with open(f"/proc/{d}/environ", "rb") as f:
                env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
            found.append((int(d), int(env.get(b"OMPI_COMM_WORLD_RANK", b"-1"))))
        except (OSError, ValueError, IndexError):
            continue  # exited while being read
    return found


def wait_gone(ctx, out, timeout):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if not rank_pids(ctx, out):
            return time.monotonic() - t0
        time.sleep(0.1)
    return None


def wait_for_file(path, timeout):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if os.path.exists(path):
            return True
        time.sleep(0.05)
    return False


def kill_session(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.communicate()


def read_state(out):
    """(results dict or None, list of points.jsonl records, problems)."""
    problems, res, lines = [], None, []
    rpath, jpath = os.path.join(out, "results.json"), os.path.join(out, "points.jsonl")
    if os.path.exists(rpath):
        try:
            with open(rpath) as f:
                res = json.load(f)
        except ValueError as e:
            problems.append(f"results.json is torn or invalid: {e}")
        if res is not None:
            missing = [k for k in TOP_LEVEL if k not in res]
            if missing:
                problems.append(f"results.json lacks {missing}")
            elif res["schema"] != "tpbench.results" or not isinstance(res["points"], list):
                problems.append("results.json: wrong schema name or points not a list")
    if os.path.exists(jpath):
        with open(jpath) as f:
            text = f.read()
        if text and not text.endswith("\n"):
            problems.append("points.jsonl ends in a partial line")
        for i, ln in enumerate(text.splitlines()):
            try:
                lines.append(json.loads(ln))
            except ValueError as e:
                problems.append(f"points.jsonl line {i + 1} does not parse: {e}")
    if res is not None and isinstance(res.get("points"), list):
        n = len(res["points"])
        if not (n <= len(lines) <= n + 1):
            problems.append(f"results.json has {n} points but points.jsonl has {len(lines)}")
    elif lines:
        problems.append("points.jsonl has points but results.json is missing or invalid")
    return res, lines, problems


SHORT = ["--steps", "6", "--warmup", "1", "--layers", "4", "--context", "256"]


def finished_run(ctx):
    """A run left alone: the reference state, and the wall time the kills are spread over."""
    out = ctx.out("finished")
    t0 = time.monotonic()
    p = launch(ctx, out, SHORT)
    _, err = p.communicate(timeout=120)
    wall = time.monotonic() - t0
    ctx.check(p.returncode == 0, f"finished run exits 0 (rc {p.returncode})\n{err[-2000:]}")
    res, lines, problems = read_state(out)
    ctx.check(not problems, "finished run: files consistent\n" + "\n".join(problems))
    ctx.check(res is not None and len(res["points"]) == 1 and len(lines) == 1,
              "finished run: one point in results.json and in points.jsonl")
    if res is not None and res["points"] and lines:
        ctx.check(res["points"][0] == lines[0], "finished run: points.jsonl line == points[0]")
    ctx.check_contract(out, ranks=2)
    return wall


def kill_mid_point(ctx):
    out = ctx.out("killed-mid-point")
    p = launch(ctx, out, ["--steps", "400"])
    appeared = wait_for_file(os.path.join(out, "results.json"), 120)
    ctx.check(appeared, "results.json is written before the point runs")
    time.sleep(1.5)  # inside the measured steps (each ~0.2 s; 400 of them)
    ranks = rank_pids(ctx, out)
    ctx.check(len(ranks) == 2, f"both ranks still running before the kill ({ranks})")
    kill_session(p)
    gone = wait_gone(ctx, out, GONE_WITHIN_S)
    ctx.check(gone is not None, f"SIGKILL of mpirun: every rank gone (after {gone} s)")
    res, lines, problems = read_state(out)
    ctx.check(not problems, "killed mid-point: files consistent\n" + "\n".join(problems))
    ok = res is not None and res["points"] == [] and not lines
    ctx.check(ok, "killed mid-point: results.json is the zero-point partial, no points.jsonl")
    if res is not None:
        ctx.check(res["config"].get("steps") == 400 and "--steps" in res["context"].get("argv", []),
                  "killed mid-point: partial records the resolved config and argv")
    leftovers = [f for f in os.listdir(out) if ".tmp" in f]
    ctx.check(not leftovers, f"killed mid-point: no temp files left ({leftovers})")


def kill_one_rank(ctx):
    out = ctx.out("rank-killed")
    p = launch(ctx, out, ["--steps", "400"])
    wait_for_file(os.path.join(out, "results.json"), 120)
    time.sleep(1.0)
    victims = [pid for pid, rank in rank_pids(ctx, out) if rank == 1]
    ctx.check(len(victims) == 1, f"found rank 1 ({victims})")
    t0 = time.monotonic()
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    try:
        p.communicate(timeout=30)
        ended = time.monotonic() - t0
    except subprocess.TimeoutExpired:
        ended = None
        kill_session(p)
    ctx.check(ended is not None and p.returncode != 0,
              f"SIGKILL of rank 1: mpirun ends with non-zero rc {p.returncode} (after {ended} s)")
    gone = wait_gone(ctx, out, GONE_WITHIN_S)
    ctx.check(gone is not None, "SIGKILL of rank 1: every rank gone")
    res, lines, problems = read_state(out)
    ctx.check(not problems and res is not None,
              "SIGKILL of rank 1: results.json parseable\n" + "\n".join(problems))


def crash_one_rank_mid_sweep(ctx):
    """SIGSEGV (the signal a real fault raises; the default action kills the process as a
    segfault does) to rank 1 while point 3 of a 4-point sweep runs."""
    out = ctx.out("rank-segv-sweep")
    cmd = [ctx.mpirun, "-np", "2", "--oversubscribe", "--bind-to", "none", ctx.tpbench, "sweep",
           "--model", "tiny", "--layers", "2", "--context", "256", "--steps", "30", "--warmup", "1",
           "--batch", "1,2,4,8", "--out", out]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=ctx.env, start_new_session=True)
    ledger = os.path.join(out, "points.jsonl")
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and p.poll() is None:
        if os.path.exists(ledger) and open(ledger).read().count("\n") >= 2:
            break
        time.sleep(0.05)
    victims = [pid for pid, rank in rank_pids(ctx, out) if rank == 1]
    ctx.check(p.poll() is None and len(victims) == 1,
              f"sweep still running at point 3 with rank 1 alive ({victims})")
    t0 = time.monotonic()
    for pid in victims:
        os.kill(pid, signal.SIGSEGV)
    try:
        _, err = p.communicate(timeout=30)
        ended = time.monotonic() - t0
    except subprocess.TimeoutExpired:
        ended, err = None, ""
        kill_session(p)
    ctx.check(ended is not None and p.returncode != 0,
              f"SIGSEGV of rank 1: mpirun ends with non-zero rc {p.returncode} (after {ended} s)")
    ctx.check(wait_gone(ctx, out, GONE_WITHIN_S) is not None, "SIGSEGV of rank 1: every rank gone")
    res, lines, problems = read_state(out)
    ctx.check(not problems and res is not None,
              "SIGSEGV of rank 1: results parseable\n" + "\n".join(problems))
    batches = [ln["params"]["batch"] for ln in lines if ln.get("status") == "ok"]
    ctx.check(batches[:2] == [1, 2] and res is not None and len(res["points"]) >= 2,
              f"SIGSEGV of rank 1: the finished points are on disk (batches {batches}, "
              f"results.json {len(res['points']) if res else None} point(s))")


def rerun_into_same_out(ctx):
    out = ctx.out("finished")  # finished_run's directory: one point
    p = launch(ctx, out, SHORT)
    stdout, err = p.communicate(timeout=120)
    ctx.check(p.returncode == 0, f"second run into the same --out exits 0\n{err[-1000:]}")
    prev = [d for d in os.listdir(out) if d.startswith("previous-")]
    ctx.check(len(prev) == 1 and "moved them to" in stdout,
              f"the first run's files moved to previous-<time>/ and said so ({prev})")
    res, lines, problems = read_state(out)
    ctx.check(not problems and len(lines) == 1 and res is not None and len(res["points"]) == 1,
              f"second run: its own one point, not appended ({len(lines)} line(s))")
    if prev:
        old, old_lines, old_problems = read_state(os.path.join(out, prev[0]))
        ctx.check(not old_problems and old is not None and len(old_lines) == 1,
                  "the first run's results are intact in the archive")


def kill_at_many_moments(ctx, wall):
    """Short runs killed at moments spread over start-up, the point and the final write, as
    fractions of the wall time of the same run left alone."""
    for frac in (0.15, 0.35, 0.55, 0.7, 0.8, 0.88, 0.94, 0.98):
        delay = frac * wall
        out = ctx.out(f"kill-at-{frac:.2f}")
        p = launch(ctx, out, SHORT)
        try:
            p.communicate(timeout=delay)
            state = f"finished (rc {p.returncode})"
        except subprocess.TimeoutExpired:
            kill_session(p)
            state = "killed"
        gone = wait_gone(ctx, out, GONE_WITHIN_S)
        res, lines, problems = read_state(out)
        have = "absent" if res is None else f"{len(res['points'])} point(s)"
        ctx.check(gone is not None and not problems,
                  f"kill at {delay:.1f} s of {wall:.1f} ({state}): results.json {have}, "
                  f"points.jsonl {len(lines)} line(s)" + "".join("\n" + x for x in problems))


def main():
    ctx = Ctx()
    wall = finished_run(ctx)
    kill_mid_point(ctx)
    kill_one_rank(ctx)
    crash_one_rank_mid_sweep(ctx)
    rerun_into_same_out(ctx)
    kill_at_many_moments(ctx, wall)
    ctx.finish()


if __name__ == "__main__":
    main()
