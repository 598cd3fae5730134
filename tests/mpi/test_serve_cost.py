#!/usr/bin/env python3
"""`tpbench serve --price GPU=USD_PER_HOUR` (results 1.25.0, issue 58 item 1): the cost per
million tokens on each serve point and at the SLO capacity, on the model backend (one process,
virtual time: seconds).
- with --price: each ok point's metrics.cost_per_mtok is GPUs x price / 3600 / its own tokens/s
  x 1e6, for output and for total tokens; the curve's points and its SLO capacity carry the
  capacity load's; the config echoes the price; the OpenMetrics export has the families;
- a hardware profile's price_per_hour prices the run when --price is absent, and says so;
- whatif's serve replays: each fix's cost per million output tokens at its own tokens/s;
- no price: no cost field anywhere (absent, not 0), whatif's included;
- a price for another GPU, a negative price, a non-number: one line naming --price, exit 2."""
import json
import os
import subprocess
import time

from tpbtest import Ctx

BASE = ["serve", "--backend", "model", "--collective", "model", "--world", "2", "--tp", "2",
        "--model", "llama-3.1-8b", "--hardware", "h100-sxm:datasheet", "--layers", "4",
        "--requests", "16", "--prompt-len", "128", "--output-len", "32", "--concurrency", "1,4",
        "--slo", "ttft=10s"]


def run(c, name, args, expect_rc=0):
    out = c.out(name)
    t0 = time.monotonic()
    p = subprocess.run([c.tpbench] + args + ["--out", out], capture_output=True, text=True,
                       env=c.env, timeout=300)
    print(f"     {time.monotonic() - t0:6.1f} s  {name}")
    c.check(p.returncode == expect_rc,
            f"{name}: rc {p.returncode}, expected {expect_rc}: {p.stderr[-800:]}")
    return out, p


def close(a, b):
    return a is not None and b is not None and abs(a - b) <= 1e-9 * abs(b)


def priced(c):
    out, p = run(c, "priced", BASE + ["--price", "h100-sxm=2.5"])
    res = c.results(out)
    c.check(res["config"].get("price") == "h100-sxm=2.5", f"config echoes the price: {res['config'].get('price')}")
    for i, pt in enumerate(res["points"]):
        m = pt["metrics"]
        cost = m.get("cost_per_mtok")
        c.check(cost is not None, f"point {i} has metrics.cost_per_mtok")
        if cost is None:
            continue
        gpus = len(pt["ranks"])
        c.check(cost["gpus"] == gpus == 2, f"point {i}: gpus {cost['gpus']} = its ranks")
        # Hand formula on the point's own tokens/s: 2 GPUs x $2.50/h = $5/h.
        want_out = 2 * 2.5 / 3600 / m["output_tokens_per_s"] * 1e6
        want_tot = 2 * 2.5 / 3600 / m["total_tokens_per_s"] * 1e6
        c.check(close(cost["output_usd"], want_out),
                f"point {i}: output_usd {cost['output_usd']} = 5/3600/{m['output_tokens_per_s']}*1e6 = {want_out}")
        c.check(close(cost["total_usd"], want_tot), f"point {i}: total_usd {cost['total_usd']} = {want_tot}")
        c.check(cost["price_source"] == "--price" and cost["usd_per_gpu_hour"] == 2.5,
                f"point {i}: price {cost['usd_per_gpu_hour']} from {cost['price_source']}")
        c.check(cost["output_usd"] > cost["total_usd"], f"point {i}: output tokens cost more each")
    curve = res["curve"]
    by_x = {pt["params"]["serve"]["x"]: pt["metrics"].get("cost_per_mtok") for pt in res["points"]}
    for cp in curve["points"]:
        c.check(cp.get("cost_per_mtok") == by_x[cp["x"]], f"curve point {cp['x']} carries its point's cost")
    cap = curve["slo_capacity"]
    c.check(cap["x"] is not None and cap.get("cost_per_mtok") == by_x.get(cap["x"]),
            f"slo_capacity at {cap['x']} carries that load's cost: {cap.get('cost_per_mtok')}")
    c.check("cost:" in p.stdout and "per million output tokens" in p.stdout, "the console says the cost")
    e = subprocess.run([c.tpbench, "export", "--format", "openmetrics", out], capture_output=True,
                       text=True, env=c.env, timeout=60)
    lines = [ln for ln in e.stdout.splitlines() if ln.startswith("tpbench_cost_usd_per_million_output_tokens{")]
    c.check(e.returncode == 0 and len(lines) == 2, f"export: {len(lines)} output-cost samples (2 loads)")
    whatif(c, out, res)
    return res


def whatif(c, out, res):
    """whatif's serve replays: each fix's cost at its own output tokens/s, the same GPUs and price."""
    w = subprocess.run([c.tpbench, "whatif", out], capture_output=True, text=True, env=c.env, timeout=120)
    c.check(w.returncode == 0, f"whatif: rc {w.returncode} {w.stderr[-400:]}")
    cfs = c.results(out).get("whatif", {}).get("counterfactuals", [])
    priced_cfs = [cf for cf in cfs if cf.get("tokens_per_s")]
    c.check(len(priced_cfs) >= 2, f"whatif: {len(priced_cfs)} counterfactuals with tokens/s")
    for cf in priced_cfs:
        want = 2 * 2.5 / 3600 / cf["tokens_per_s"] * 1e6
        own = res["points"][cf["point"]]["metrics"]["cost_per_mtok"]["output_usd"]
        c.check(close(cf.get("cost_per_mtok_output_usd"), want)
                and close(cf["delta"]["measured"].get("cost_per_mtok_output_usd"), own),
                f"whatif {cf['name']} point {cf['point']}: cost {cf.get('cost_per_mtok_output_usd')} = "
                f"5/3600/{cf['tokens_per_s']}*1e6, measured {own}")


def profile_price(c):
    src = os.path.join(c.source, "configs", "hardware", "h100-sxm.json")
    with open(src) as f:
        prof = json.load(f)
    prof["price_per_hour"] = {"usd": 4.0, "source": "test rate card"}
    path = c.out("h100-priced.json")
    os.makedirs(c.work, exist_ok=True)
    with open(path, "w") as f:
        json.dump(prof, f)
    args = [a if a != "h100-sxm:datasheet" else path for a in BASE]
    out, _ = run(c, "profile", args)
    res = c.results(out)
    cost = res["points"][0]["metrics"].get("cost_per_mtok") or {}
    m = res["points"][0]["metrics"]
    c.check(cost.get("usd_per_gpu_hour") == 4.0 and "test rate card" in cost.get("price_source", ""),
            f"the profile's price_per_hour prices it: {cost}")
    c.check(close(cost.get("output_usd"), 2 * 4.0 / 3600 / m["output_tokens_per_s"] * 1e6),
            "profile price: output_usd by the formula")


def unpriced(c):
    out, _ = run(c, "unpriced", BASE)
    res = c.results(out)
    def keys(o):
        if isinstance(o, dict):
            for k, v in o.items():
                yield k
                yield from keys(v)
        elif isinstance(o, list):
            for v in o:
                yield from keys(v)
    c.check("cost_per_mtok" not in set(keys(res)), "no price: no cost_per_mtok field anywhere")
    w = subprocess.run([c.tpbench, "whatif", out], capture_output=True, text=True, env=c.env, timeout=120)
    names = set(keys(c.results(out).get("whatif", {})))
    c.check(w.returncode == 0 and "tokens_per_s" in names and "cost_per_mtok_output_usd" not in names,
            "no price: whatif has no cost figure")
    c.check("price" not in res["config"], "no price: none in the config")


def bad(c):
    for name, price, word in [("other_gpu", "h200-sxm=3.5", "h100-sxm"),
                              ("negative", "h100-sxm=-1", ">= 0"),
                              ("not_number", "h100-sxm=cheap", ">= 0")]:
        _, p = run(c, "bad_" + name, BASE + ["--price", price], expect_rc=2)
        err = [ln for ln in p.stderr.splitlines() if ln.strip()]
        c.check(len(err) == 1 and "--price" in err[0] and word in err[0],
                f"--price {price}: one line naming --price: {err}")


def main():
    c = Ctx()
    priced(c)
    profile_price(c)
    unpriced(c)
    bad(c)
    c.finish()


if __name__ == "__main__":
    main()
