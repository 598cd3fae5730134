#!/usr/bin/env python3
"""straggler.cause against faults whose nature is known, and the caused wait against the
arrival count. The cause reads per-op times, the cost model and each rank's own counters, never
its --inject, so each fault below is a truth it did not see.

Model backend (8 virtual ranks, Llama-3.1-70B bf16 TP 8 on h100-sxm, --model-noise so the
ranks differ; the fault on rank 3):
- prefill, mem_contend (the byte side of each op x2): memory_bound_ops;
- prefill, sm_clock=1200 (the FLOP side x1980/1200): flop_bound_ops;
- decode, mem_contend: every_op, saying that at decode memory and clock are not told apart
  (every op is below the ridge);
- decode, host_delay 2 ms: outside_ops; decode, slowdown 1.3: injected_work;
- decode, slow_op=attention@2 (rank 3's attention kernel twice as long): one_op, attention, x2.00;
- decode, no fault: no_excess, and diagnose's balance line is no problem;
- compare's diff at prefill: nvlink4 against pcie5-switch is slower in transfer, and against
  a memory hog on every rank on the memory-bound ops; at decode, against rank 3's attention
  twice as long, in wait, naming rank 3 and its one op.

CPU backend, 2 real ranks:
- busy processes outside tpbench on rank 1's cores (busy_neighbour.py, mpirun --bind-to core):
  rank 1 is where the waiting comes from, its extra time is on every op, and its own counters
  show it off its core;
- --inject host_delay on rank 1: rank 1 is where the waiting comes from (whichever rank the
  arrival count names: both ranks arrive last about as often), and its extra time is outside
  its ops; diagnose names it, and whatif's no_straggler gives the 3 ms back;
- --inject slow_op=attention@3 on rank 1 (its attention's own stamps 3x as long): rank 1
  causes the wait, and its extra time is in one op, attention."""
import json
import os
import subprocess
import sys

from tpbtest import Ctx

MODEL = ["run", "--backend", "model", "--world", "8", "--tp", "8", "--model", "llama-3.1-70b",
         "--dtype", "bf16", "--hardware", "h100-sxm", "--topology", "nvlink4", "--batch", "16",
         "--prompt", "2048", "--context", "2048", "--model-noise", "1:0.02"]
CPU = ["run", "--model", "tiny", "--batch", "4", "--layers", "4", "--steps", "20"]


def straggler(c, out):
    return c.results(out)["points"][0]["straggler"]


def balance_line(c, out):
    """diagnose's balance verdict for the results in `out`."""
    d = subprocess.run([c.tpbench, "diagnose", out], capture_output=True, text=True, env=c.env,
                       timeout=60)
    return next((x for x in d.stdout.splitlines() if " balance " in x), "")


def model_cases(c):
    cases = [("prefill", "rank=3:mem_contend=1", "memory_bound_ops"),
             ("prefill", "rank=3:sm_clock=1200", "flop_bound_ops"),
             ("decode", "rank=3:mem_contend=1", "every_op"),
             ("decode", "rank=3:host_delay=2000", "outside_ops"),
             ("decode", "rank=3:slowdown=1.3", "injected_work"),
             ("decode", "rank=3:slow_op=attention@2", "one_op"),
             ("decode", None, "no_excess")]
    for phase, inject, want in cases:
        out = c.out(f"model-{phase}-{want}")
        args = MODEL + ["--phase", phase, "--out", out] + (["--inject", inject] if inject else [])
        p = subprocess.run([c.tpbench] + args, capture_output=True, text=True, env=c.env,
                           timeout=120)
        c.check(p.returncode == 0, f"model {phase} {inject}: rc {p.returncode} {p.stderr[-500:]}")
        if p.returncode != 0:
            continue
        s = straggler(c, out)
        cause = s["cause"]
        where = "" if inject is None else " on rank 3"
        c.check(cause["kind"] == want and (inject is None or cause["rank"] == 3),
                f"model {phase}, {inject or 'no fault'}: the cause is {want}{where} "
                f"(got {cause['kind']} on rank {cause['rank']}: {cause['text']})")
        if want == "every_op":
            c.check("not told apart" in cause["text"] and cause.get("flop_bound_ratio") is None,
                    f"model decode: every op is below the ridge, and the cause says so: "
                    f"{cause['text']}")
        if want == "one_op":
            c.check("attention carries" in cause["text"] and "x2.00" in cause["text"],
                    f"model decode, slow_op: the op is attention, at x2.00: {cause['text']}")
        if inject is None:
            line = balance_line(c, out)
            c.check("problem" not in line, f"model decode, no fault: balance is no problem: {line}")


def cpu_neighbour(c):
    out, pidfile = c.out("cpu-neighbour"), c.out("neighbour.pids")
    wrapper = os.path.join(os.path.dirname(os.path.abspath(__file__)), "busy_neighbour.py")
    cmd = [c.mpirun, "-np", "2", "--bind-to", "core", sys.executable, wrapper, "1", pidfile,
           c.tpbench] + CPU + ["--out", out]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=c.env, timeout=300)
    finally:
        kill_listed(pidfile)
    c.check(p.returncode == 0, f"cpu with a busy neighbour on rank 1: rc {p.returncode} "
                               f"{p.stderr[-800:]}")
    if p.returncode != 0:
        return
    s = straggler(c, out)
    cause = s["cause"]
    print(f"     neighbour: {s}")
    c.check(s.get("costliest_rank") == 1 and cause["rank"] == 1,
            f"cpu, a busy neighbour on rank 1's cores: rank 1 causes the most wait "
            f"({s.get('costliest_share')}; arrival straggler rank {s['rank']})")
    c.check(cause["kind"] == "every_op",
            f"cpu, busy neighbour: rank 1's extra time is on every op ({cause['kind']}: "
            f"{cause['text']})")
    c.check(any("off its core" in e for e in cause["evidence"]),
            f"cpu, busy neighbour: rank 1's own counters show it off its core "
            f"({cause['evidence']})")


def kill_listed(pidfile):
    """The neighbours die with their rank; any that did not are killed here, by PID."""
    if not os.path.exists(pidfile):
        return
    with open(pidfile) as f:
        for line in f:
            try:
                os.kill(int(line), 9)
            except (ProcessLookupError, ValueError):
                pass


def cpu_host_delay(c):
    out = c.out("cpu-host-delay")
    c.mpi(2, CPU + ["--inject", "rank=1:host_delay=3000", "--out", out])
    s = straggler(c, out)
    cause = s["cause"]
    c.check(s.get("costliest_rank") == 1 and cause["kind"] == "outside_ops" and cause["rank"] == 1,
            f"cpu, host_delay on rank 1: rank 1 causes the most wait and its extra time is outside "
            f"its ops (arrival straggler rank {s['rank']}; {cause['kind']} on rank {cause['rank']}: "
            f"{cause['text']})")
    line = balance_line(c, out)
    c.check("problem" in line and "rank 1: its extra time is outside its ops" in line,
            f"cpu, host_delay: diagnose names rank 1 and where its time goes: {line}")
    w = subprocess.run([c.tpbench, "whatif", out, "--json"], capture_output=True, text=True,
                       env=c.env, timeout=120)
    fix = next((x for x in json.loads(w.stdout)["counterfactuals"] if x["name"] == "no_straggler"),
               {}) if w.returncode == 0 else {}
    gain = fix["delta"]["measured"]["itl_p50_s"] - fix["itl_p50_s"] if fix.get("itl_p50_s") else 0
    # At least the injected 3 ms less a margin: fixing the straggler takes its host time too.
    c.check(gain > 0.0025, f"cpu, host_delay: whatif's no_straggler gives back rank 1's 3 ms of "
                           f"host work per step (p50 {gain * 1e3:.2f} ms)")


def cpu_slow_op(c):
    """A kernel slow on one rank (--inject slow_op: the op's own stamp stretched, not injected
    work), measured: the cause names that op and about its factor."""
    out = c.out("cpu-slow-op")
    c.mpi(2, CPU + ["--context", "2048", "--inject", "rank=1:slow_op=attention@3", "--out", out])
    p = c.results(out)["points"][0]
    s, cause = p["straggler"], p["straggler"]["cause"]
    c.check(s.get("costliest_rank") == 1 and cause["kind"] == "one_op" and
            "attention carries" in cause["text"],
            f"cpu, slow_op=attention@3 on rank 1: rank 1 causes the wait, in attention "
            f"({cause['kind']} on rank {cause['rank']}: {cause['text']})")
    # The op's own time, not Op::injected (ranks[].injected_s is written for slowdown and jitter)
    c.check(all(r.get("injected_s") is None for r in p["ranks"]),
            "cpu, slow_op: no injected segments; the slow op's time is its own")


def compare_cases(c):
    """compare's diff: the same point on two fabrics differs in transfer; with and without a
    memory hog on every rank, on the memory-bound ops."""
    def go(name, extra, fabric="nvlink4", phase="prefill"):
        out = c.out(f"cmp-{name}")
        args = [fabric if k and MODEL[k - 1] == "--topology" else a for k, a in enumerate(MODEL)]
        p = subprocess.run([c.tpbench] + args + ["--phase", phase, "--out", out] + extra,
                           capture_output=True, text=True, env=c.env, timeout=120)
        c.check(p.returncode == 0, f"compare input {name}: rc {p.returncode} {p.stderr[-300:]}")
        return out

    base, decode = go("nvlink4", []), go("decode", [], phase="decode")
    pairs = [(base, go("pcie5", [], "pcie5-switch"), "transfer"),
             (base, go("hog", ["--inject", ",".join(f"rank={r}:mem_contend=1" for r in range(8))]),
              "memory_bound_ops"),
             # one rank's attention kernel twice as long: the others wait, and the diff says
             # which rank and why, from the slower point's own cause
             (decode, go("slow-attn", ["--inject", "rank=3:slow_op=attention@2"],
                         phase="decode"), "wait")]
    for base, other, want in pairs:
        out = c.out(f"cmp-{want}")
        p = subprocess.run([c.tpbench, "compare", base, other, "--out", out],
                           capture_output=True, text=True, env=c.env, timeout=60)
        c.check(p.returncode == 0, f"compare {other}: rc {p.returncode} {p.stderr[-300:]}")
        if p.returncode != 0:
            continue
        with open(os.path.join(out, "compare.json")) as f:
            row = json.load(f)["rows"][0]
        d = row["entries"][1].get("diff", {})
        c.check(d.get("kind") == want and d.get("slower") == "B" and d.get("step_s", 0) > 0,
                f"compare A {os.path.basename(base)} vs B {os.path.basename(other)}: B slower, "
                f"its extra time {want} (got {d})")
        if want == "wait":
            c.check(d.get("late_rank") == 3 and d.get("late_kind") == "one_op" and
                    "attention carries" in d.get("text", ""),
                    f"compare, slow attention on rank 3: the diff names rank 3 and its one op "
                    f"({d.get('late_rank')}, {d.get('late_kind')}: {d.get('text')})")


def main():
    c = Ctx()
    model_cases(c)
    compare_cases(c)
    cpu_neighbour(c)
    cpu_host_delay(c)
    cpu_slow_op(c)
    c.finish()


if __name__ == "__main__":
    main()
