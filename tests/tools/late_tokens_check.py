#!/usr/bin/env python3
"""Checks a serve run's longest gaps (`metrics.itl_attribution.worst[]`) against its own logs,
read here independently of tpbench's C++:

- the gaps: every inter-token gap of the measured requests in requests.jsonl, each ending at the
  step of steps.jsonl whose end time (t_s) is its later token's time. worst[] must be the longest
  gap of each of the 5 steps whose longest gaps are the longest (distinct steps, longest first),
  with `tokens` the number of gaps that step ended;
- between_steps is the gap less its step's duration_s; `part` is the largest of the parts;
  skipped_steps is the number of steps between the gap's two tokens, preemptions the request's;
- the prompts (1.22.0): the step prefilled rows exactly when steps.jsonl counts prefill tokens;
  the named rows are the largest, their tokens add up to the step's prefill_tokens when every
  row is named (and stay under it when not); each row is a request of the point that had
  arrived, within its prompt (or its recompute), and a row that ends a prompt (cached + tokens
  = prompt_len, never preempted) produced that request's first token at this step, while a row
  that does not end it came before that first token.

Exits 1 on any failure, printing each; prints one line per point checked.

Usage: late_tokens_check.py RESULTS_DIR"""
import json
import os
import sys

TOL = 1e-12
PARTS = ("prefill", "imbalance", "host", "transfer", "bandwidth", "jitter")


def load(folder):
    res = json.load(open(os.path.join(folder, "results.json")))
    reqs = [json.loads(l) for l in open(os.path.join(folder, "requests.jsonl")) if l.strip()]
    steps = [json.loads(l) for l in open(os.path.join(folder, "steps.jsonl")) if l.strip()]
    return res, reqs, steps


def gaps_by_step(reqs, step_at):
    """Every measured gap as (gap_s, request, token), grouped by the step that ended it."""
    out = {}
    for r in reqs:
        if r["warmup"] or r["rejected"]:
            continue
        t = r["token_s"]
        if len(t) != r["output_len"]:
            raise SystemExit(f"request {r['id']}: token_s cut short; use short outputs")
        for k in range(1, len(t)):
            out.setdefault(step_at[t[k]], []).append((t[k] - t[k - 1], r["id"], k))
    return out


def check_sat_out(w, reqs, step_at, fail):
    """skipped_steps: the steps between the gap's two tokens; preemptions: the request's."""
    r = reqs.get(w["request"])
    if r is None or w.get("skipped_steps") is None:
        return fail(f"step {w['step']}: no request {w['request']} or no skipped_steps")
    prev = step_at[r["token_s"][w["token"] - 1]]
    if w["skipped_steps"] != w["step"] - prev - 1 or w.get("preemptions") != r["preemptions"]:
        fail(f"step {w['step']}: skipped {w['skipped_steps']} (the logs: {w['step'] - prev - 1}), "
             f"preemptions {w.get('preemptions')} (the log: {r['preemptions']})")


def check_gaps(worst, by_step, fail):
    """worst[] against the gaps recomputed from the logs."""
    longest = sorted(((max(g)[0], s) for s, g in by_step.items()), key=lambda x: -x[0])[:5]
    want = [g for g, _ in longest]
    got = [w["gap_s"] for w in worst]
    if len(got) != len(want) or any(abs(a - b) > TOL for a, b in zip(got, want)):
        fail(f"the longest gaps of distinct steps are {want}, worst[] has {got}")
    for w in worst:
        g = by_step.get(w["step"], [])
        if not any(abs(x - w["gap_s"]) <= TOL and r == w["request"] and k == w["token"]
                   for x, r, k in g):
            fail(f"step {w['step']} ended no gap of {w['gap_s']} s at request {w['request']} "
                 f"token {w['token']}")
        if w["tokens"] != len(g):
            fail(f"step {w['step']} ended {len(g)} gaps, worst[] says {w['tokens']}")


def check_parts(w, step, fail):
    parts = w.get("parts_s")
    if parts is None:
        return fail(f"step {w['step']}: no parts_s")
    between = max(0.0, w["gap_s"] - step["duration_s"])
    if abs(parts["between_steps"] - between) > TOL:
        fail(f"step {w['step']}: between_steps {parts['between_steps']}, the log gives {between}")
    top = max(PARTS, key=lambda k: parts[k])
    name = "between_steps" if parts["between_steps"] > parts[top] else top
    if w["part"] != name or abs(w["part_s"] - parts[name]) > TOL:
        fail(f"step {w['step']}: part {w['part']} ({w['part_s']}), the largest is {name} "
             f"({parts[name]})")


def check_row(row, step, req, fail):
    where = f"step {step['step']} row of request {row['request']}"
    if req is None:
        return fail(f"{where}: no such request in the point")
    if req["arrival_s"] > step["t_s"] + TOL:
        fail(f"{where}: prefilled before it arrived")
    if row["tokens"] < 1 or row["cached"] + row["tokens"] > req["prompt_len"] + req["output_len"]:
        fail(f"{where}: {row['cached']} + {row['tokens']} tokens past its prompt and output")
    if req["preemptions"] > 0:
        return
    ends = row["cached"] + row["tokens"] == req["prompt_len"]
    if ends and abs(req["first_token_s"] - step["t_s"]) > TOL:
        fail(f"{where}: ends its prompt, but its first token is not this step's")
    if not ends and req["first_token_s"] <= step["t_s"] + TOL:
        fail(f"{where}: a chunk short of its prompt's end, after its first token")


def check_prompts(w, step, reqs, fail):
    rows, n = w.get("prefilled"), w.get("prefill_requests")
    if rows is None or n is None:
        return fail(f"step {w['step']}: no prefilled / prefill_requests")
    if (n > 0) != (step["prefill_tokens"] > 0) or len(rows) > n:
        fail(f"step {w['step']}: {n} prompt rows ({len(rows)} named) against "
             f"{step['prefill_tokens']} prefill tokens")
    total = sum(r["tokens"] for r in rows)
    if total > step["prefill_tokens"] or (len(rows) == n and total != step["prefill_tokens"]):
        fail(f"step {w['step']}: the named rows hold {total} tokens of "
             f"{step['prefill_tokens']} ({len(rows)} of {n} rows)")
    if any(a["tokens"] < b["tokens"] for a, b in zip(rows, rows[1:])):
        fail(f"step {w['step']}: the named rows are not the largest first")
    for row in rows:
        check_row(row, step, reqs.get(row["request"]), fail)


def check_point(i, p, reqs, steps, fail):
    worst = ((p.get("metrics") or {}).get("itl_attribution") or {}).get("worst")
    if not worst:
        return fail(f"point {i}: no worst[]")
    mine = {s["step"]: s for s in steps if s["point"] == i}
    step_at = {s["t_s"]: s["step"] for s in mine.values()}
    by_step = gaps_by_step(reqs, step_at)
    check_gaps(worst, by_step, fail)
    by_id = {r["id"]: r for r in reqs}
    for w in worst:
        step = mine.get(w["step"])
        if step is None:
            fail(f"point {i}: step {w['step']} is not in steps.jsonl")
            continue
        check_parts(w, step, fail)
        check_prompts(w, step, by_id, fail)
        check_sat_out(w, by_id, step_at, fail)
    print(f"point {i}: {len(worst)} gaps, steps {[w['step'] for w in worst]}, parts "
          f"{[w['part'] for w in worst]}, prompts {[w.get('prefill_requests') for w in worst]}")


def main():
    res, reqs, steps = load(sys.argv[1])
    bad = []

    def fail(msg):
        print("FAIL", msg)
        bad.append(msg)

    for i, p in enumerate(res["points"]):
        if p["status"] == "ok":
            check_point(i, p, [r for r in reqs if r["point"] == i], steps, fail)
    if bad:
        print(f"{len(bad)} failures")
        sys.exit(1)
    print("every longest gap matches the logs")


if __name__ == "__main__":
    main()
