#!/usr/bin/env python3
"""`tpbench serve` for `vllm bench serve` users, on 1 rank of the CPU backend, tiny model, 2
layers, 6 requests (a few seconds in all):
- vLLM's spellings (--num-prompts, --max-concurrency, --request-rate inf, --random-input-len,
  --random-output-len, --goodput) resolve to the same results.json config as tpbench's own;
- the console carries vLLM's summary block per load, its rows in vLLM's order and layout, each
  number the record's (ms, two decimals);
- --save-result writes vLLM's keys with the record's values (ms), and the file reads as vLLM's
  comparison scripts read it (keys and units);
- goodput honours an e2el SLO: the good requests counted by hand from requests.jsonl;
- a bad --goodput, a length range under --random-input-len and both spellings of one option exit
  2 with one line naming the flag."""
import json
import math
import os
import re
import subprocess

from tpbtest import Ctx

BASE = ["serve", "--model", "tiny", "--layers", "2", "--seed", "1"]
ROWS = ["Successful requests:", "Failed requests:", "Maximum request concurrency:",
        "Benchmark duration (s):", "Total input tokens:", "Total generated tokens:",
        "Request throughput (req/s):", "Request goodput (req/s):",
        "Output token throughput (tok/s):", "Total token throughput (tok/s):"]
LATENCIES = [("ttft", "TTFT", "Time to First Token"),
             ("tpot", "TPOT", "Time per Output Token (excl. 1st token)"),
             ("itl", "ITL", "Inter-token Latency"), ("e2el", "E2EL", "End-to-end Latency")]


def summary_blocks(stdout):
    """Each block as [(label, value text)], parsed as a vLLM user's regex would."""
    blocks, cur = [], None
    for line in stdout.splitlines():
        if line == "=" * 12 + " Serving Benchmark Result " + "=" * 12:
            cur = []
        elif cur is not None and line == "=" * 50:
            blocks.append(cur)
            cur = None
        elif cur is not None:
            m = re.match(r"^(.{40}) (\S+)\s*$", line)
            cur.append((m.group(1).strip(), m.group(2)) if m else (line, None))
    return blocks


def expected_rows(p):
    m, s = p["metrics"], p["serve"]
    rows = [("Successful requests:", s["requests_completed"]),
            ("Failed requests:", s["requests_rejected"]),
            ("Maximum request concurrency:", p["params"]["serve"]["concurrency"]),
            ("Benchmark duration (s):", s["duration_s"]),
            ("Total input tokens:", s["input_tokens"]),
            ("Total generated tokens:", s["output_tokens"]),
            ("Request throughput (req/s):", m["request_throughput"]),
            ("Request goodput (req/s):", m["goodput"]["requests_per_s"]),
            ("Output token throughput (tok/s):", m["output_tokens_per_s"]),
            ("Total token throughput (tok/s):", m["total_tokens_per_s"])]
    for key, name, header in LATENCIES:
        rows.append(("-" * ((50 - len(header)) // 2) + header +
                     "-" * (50 - len(header) - (50 - len(header)) // 2), None))
        for label, stat in (("Mean", "mean"), ("Median", "p50"), ("P99", "p99")):
            rows.append((f"{label} {name} (ms):", m[f"{key}_s"][stat] * 1e3))
    return rows


def check_block(c, block, p):
    want = expected_rows(p)
    c.check([l for l, _ in block] == [l for l, _ in want],
            f"the summary block has vLLM's rows in vLLM's order ({[l for l, _ in block]})")
    bad = [(l, got, w) for (l, got), (_, w) in zip(block, want)
           if w is not None and (got is None or abs(float(got) - w) > 0.005 + 1e-9 * abs(w))]
    c.check(not bad, f"every number of the block is the record's, in ms ({bad})")


def check_vllm_file(c, path, p):
    j = json.load(open(path))
    m, s = p["metrics"], p["serve"]
    want = {"completed": s["requests_completed"], "failed": s["requests_rejected"],
            "total_input_tokens": s["input_tokens"], "total_output_tokens": s["output_tokens"],
            "duration": s["duration_s"], "request_throughput": m["request_throughput"],
            "request_goodput": m["goodput"]["requests_per_s"],
            "output_throughput": m["output_tokens_per_s"],
            "total_token_throughput": m["total_tokens_per_s"],
            "num_prompts": 6, "max_concurrency": 2, "request_rate": "inf"}
    for key, _, _ in LATENCIES:
        for stat, rec in (("mean", "mean"), ("median", "p50"), ("std", "std"), ("p99", "p99")):
            want[f"{stat}_{key}_ms"] = m[f"{key}_s"][rec] * 1e3
    bad = [(k, j.get(k), v) for k, v in want.items()
           if k not in j or (isinstance(v, float) and abs(j[k] - v) > 1e-9 * max(1, abs(v)))
           or (not isinstance(v, float) and j[k] != v)]
    c.check(not bad, f"{os.path.basename(path)}: vLLM's keys with the record's values ({bad})")
    # As vLLM's benchmark comparison reads a result: numbers in ms under these names.
    c.check(all(isinstance(j[k], (int, float)) for k in
                ("request_throughput", "output_throughput", "median_ttft_ms", "median_tpot_ms",
                 "median_itl_ms", "p99_ttft_ms", "p99_tpot_ms", "p99_itl_ms")),
            "the comparison scripts' keys hold numbers")
    return j


def hand_goodput(out, e2el_ms):
    reqs = [json.loads(l) for l in open(os.path.join(out, "requests.jsonl")) if l.strip()]
    done = [r for r in reqs if not r["warmup"] and not r["rejected"]]
    good = sum(1 for r in done if (r["finish_s"] - r["arrival_s"]) * 1e3 <= e2el_ms)
    duration = max(r["finish_s"] for r in done) - min(r["arrival_s"] for r in done)
    return good, len(done), good / duration


def config_without_out(res):
    return {k: v for k, v in res["config"].items() if k not in ("out",)}


def spellings_and_files(c):
    load = ["--prompt-len", "16", "--output-len", "4"]
    own_out = c.out("own")
    c.mpi(1, BASE + ["--requests", "6", "--concurrency", "2"] + load +
          ["--slo", "ttft=100000,e2el=1", "--out", own_out], timeout=120)
    own = c.results(own_out)
    # An e2el SLO of 1 ms fails every request that the 100 s TTFT SLO alone would pass.
    good, done, _ = hand_goodput(own_out, 1.0)
    c.check(good == 0 and own["points"][0]["metrics"]["goodput"]["fraction"] == 0,
            f"--slo e2el=1: no request is good ({own['points'][0]['metrics']['goodput']})")
    # An e2el SLO near the median, so that it splits the requests (the virtual clock varies).
    e2el_ms = round(own["points"][0]["metrics"]["e2el_s"]["p50"] * 1e3, 3)
    out, files = c.out("vllm"), c.out("vllm_files")
    vllm = ["--num-prompts", "6", "--max-concurrency", "2", "--request-rate", "inf",
            "--random-input-len", "16", "--random-output-len", "4",
            "--goodput", "ttft:100000", f"e2el:{e2el_ms}", "--save-result",
            "--result-dir", files, "--result-filename", "point.json"]
    _, stdout, _ = c.mpi(1, BASE + vllm + ["--out", out], timeout=120)
    res = c.results(out)
    a, b = config_without_out(own), config_without_out(res)
    a["slo"] = b["slo"]  # the SLO values differ by design; the keys' spelling is checked below
    c.check(a == b, f"vLLM's spellings give tpbench's config ({a} vs {b})")
    c.check(res["config"]["slo"] == f"ttft=100000,e2el={e2el_ms:g}",
            f"--goodput becomes --slo's text ({res['config']['slo']})")
    p = res["points"][0]
    blocks = summary_blocks(stdout)
    c.check(len(blocks) == 1, f"one summary block per load ({len(blocks)})")
    if blocks:
        check_block(c, blocks[0], p)
    j = check_vllm_file(c, os.path.join(files, "point.json"), p)
    good, done, per_s = hand_goodput(out, e2el_ms)
    print(f"e2el SLO {e2el_ms} ms: {good}/{done} requests good by hand")
    c.check(math.isclose(p["metrics"]["goodput"]["fraction"], good / done, rel_tol=1e-12) and
            math.isclose(j["request_goodput"], per_s, rel_tol=1e-9),
            f"goodput honours the e2el SLO ({good}/{done} by hand, {per_s} req/s; "
            f"results {p['metrics']['goodput']})")


def bad_input(c):
    """Run as a singleton (no mpirun: its teardown after a failed rank costs 2 s a call), and
    the both-spellings case once more under mpirun."""
    cases = ((["--goodput", "ttft=5"], ["--goodput"]), (["--goodput", "itl:5"], ["--goodput"]),
             (["--goodput", "ttft:-1"], ["--goodput"]),
             (["--random-input-len", "uniform:8..16"], ["--random-input-len"]),
             (["--request-rate", "1,inf"], ["--request-rate"]),
             (["--request-rate", "2", "--max-concurrency", "2"], ["--request-rate"]),
             (["--concurrency", "2", "--max-concurrency", "2"], ["--max-concurrency", "--concurrency"]),
             (["--requests", "4", "--num-prompts", "4"], ["--num-prompts", "--requests"]),
             (["--slo", "ttft=5", "--goodput", "ttft:5"], ["--goodput", "--slo"]),
             (["--result-dir", c.out("x")], ["--result-dir"]))
    for args, fields in cases:
        p = subprocess.run([c.tpbench] + BASE + args + ["--out", c.out("bad")],
                           capture_output=True, text=True, env=c.env, timeout=60)
        line = [l for l in p.stderr.splitlines() if l.startswith("tpbench")]
        c.check(p.returncode == 2 and len(line) == 1 and all(f in line[0] for f in fields),
                f"{args}: exit 2, one line naming {' and '.join(fields)} ({line})")
    rc, _, err = c.mpi(1, BASE + ["--output-len", "4", "--random-output-len", "4", "--out",
                                  c.out("bad")], expect_rc=2, timeout=60)
    line = [l for l in err.splitlines() if l.startswith("tpbench")]
    c.check(rc == 2 and len(line) == 1 and "--random-output-len" in line[0]
            and "--output-len" in line[0], f"under mpirun too: exit 2, one line ({line})")


def main():
    c = Ctx()
    bad_input(c)
    spellings_and_files(c)
    c.finish()


if __name__ == "__main__":
    main()
