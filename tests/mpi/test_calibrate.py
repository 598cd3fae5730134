#!/usr/bin/env python3
"""`tpbench calibrate`: on 2 ranks it writes a hardware profile that `--hardware` accepts (a run
with it reports the calibrated peaks and says where they came from) and calibration.json whose
figures agree with themselves: GEMM FLOP/s by shape times their time give the cost model's
2mnk, the all-reduce curve is verified (#wrong 0), ascending, with a positive latency and
bandwidth and busbw = algbw * 2(n-1)/n. The op profile (real layer steps at a grid of shapes)
fills the profile's efficiency table with every compute op at every grid shape, each fraction
its roofline time over its time, and topology.json (the measured all-reduce curve) drives a
model run that gives back, at a grid shape, exactly the op times calibrate measured. On 1 rank
there is no curve and link_bw is 0; --op-profile off leaves the table out. The GEMM table and
the op profile run in the run's dtype (the CPU's fp32 by default) and say so; --dtype bf16 on
the CPU is refused as `run` refuses it."""
import json
import os

from tpbtest import Ctx

PROFILE_KEYS = ["name", "peak_flops", "peak_bw", "memory_bytes", "llc_bytes", "link_bw", "source",
                "measure_at_startup", "efficiency"]
LAYER_OPS = {"rmsnorm_attn", "qkv_proj", "rope", "kv_write", "attention", "o_proj", "residual_attn",
             "rmsnorm_mlp", "gate_up_proj", "swiglu", "down_proj", "residual_mlp"}
GRID = {("decode", 1), ("decode", 4), ("decode", 16), ("decode", 64), ("prefill", 128),
        ("prefill", 512)}


# A quarter of tiny (2 layers, hidden 512): the op profile runs real layer steps at every grid
# shape (prefill 512 at TP 1 was 4.3 s a step with tiny's 8 layers), and every check here is of
# calibrate's bookkeeping, which any shape exercises; the calibrate call went from ~105 to ~15 s.
SMALL = {"name": "tiny-quarter", "hidden": 512, "n_layers": 2, "n_heads": 8, "n_kv_heads": 4,
         "head_dim": 64, "intermediate": 2048, "vocab": 8192, "rms_eps": 1e-5,
         "rope_theta": 10000.0}


def load(path):
    with open(path) as f:
        return json.load(f)


def op_profile(c, cal, hw, det, model):
    eff = hw["efficiency"]
    c.check(eff["source"].startswith("measured by tpbench calibrate") and eff["context"] == 1024,
            f"efficiency source and context: {eff['source'][:80]}... {eff['context']}")
    have = {(p["op"], p["phase"], p["tp"], p["tokens"]) for p in eff["points"]}
    want = {(op, ph, tp, n) for op in LAYER_OPS for ph, n in GRID for tp in (1, 2)}
    c.check(have == want and all(p["fraction"] > 0 for p in eff["points"]),
            f"every compute op at every grid shape, TP 1 and 2: {len(have)} of {len(want)}, "
            f"missing {sorted(want - have)[:3]}")
    recs = det["op_profile"]
    c.check(len(recs) == 12 and all(r["status"] == "ok" for r in recs), f"12 grid points ok: {len(recs)}")
    worst = max(abs(o["fraction"] - o["roofline_s"] / o["time_s_per_step"]) for r in recs for o in r["ops"])
    c.check(worst <= 1e-12, f"fraction = roofline / time for every op ({worst:.2e})")

    # A model run at a grid shape through the calibrated profile and fabric gives back each op's
    # measured time (roofline / (roofline / time)).
    out = c.out("model-from-calibrate")
    c.mpi(1, ["run", "--backend", "model", "--world", "2", "--tp", "2", "--model", model, "--dtype", "fp32",
           "--phase", "decode", "--batch", "4", "--context", "1024", "--hardware", os.path.join(cal, "hardware.json"),
           "--topology", os.path.join(cal, "topology.json"), "--out", out])
    got = {o["op"]: o["time_s_per_step"] for o in c.results(out)["points"][0]["ops"]}
    ref = next(r for r in recs if r["phase"] == "decode" and r["tp"] == 2 and r["batch"] == 4)
    worst = max(abs(got[o["op"]] / o["time_s_per_step"] - 1) for o in ref["ops"])
    c.check(worst <= 1e-9, f"the model at a grid shape gives back calibrate's op times ({worst:.2e})")
    ar = det["all_reduce"]["points"]
    c.check(any(op.startswith("allreduce") and t > 0 for op, t in got.items()),
            f"the measured curve prices the all-reduces ({len(ar)} sizes)")


def main():
    c = Ctx()
    model = c.out("tiny-quarter.json")
    with open(model, "w") as f:
        json.dump(SMALL, f)
    cal = c.out("cal2")
    rc, stdout, _ = c.mpi(2, ["calibrate", "--out", cal, "--max-bytes", "1M", "--reps", "2", "--name", "test-box",
                              "--op-repeats", "1", "--model", model])
    hw = load(os.path.join(cal, "hardware.json"))
    det = load(os.path.join(cal, "calibration.json"))
    c.check(list(hw.keys()) == PROFILE_KEYS, f"hardware.json holds exactly the profile keys: {list(hw)}")
    c.check(hw["name"] == "test-box" and hw["measure_at_startup"] is False
            and hw["source"].startswith("measured by tpbench calibrate"), f"name and source: {hw['source']}")
    c.check(hw["peak_bw"] > 1e8 and hw["peak_flops"]["fp32"] > 1e8 and hw["link_bw"] > 0,
            f"positive peaks: bw {hw['peak_bw']:.3g} flops {hw['peak_flops']['fp32']:.3g} link {hw['link_bw']:.3g}")
    c.check(det["schema"] == "tpbench.calibration" and det["hardware"] == hw, "calibration.json embeds the profile")

    shapes = det["gemm_shapes"]
    c.check(det["dtype"] == "fp32" and {s["dtype"] for s in shapes} == {"fp32"}
            and hw["efficiency"]["dtype"] == "fp32" and " fp32 layer steps " in hw["efficiency"]["source"],
            f"the CPU's run dtype by default, recorded: table {det['dtype']}, efficiency {hw['efficiency']['dtype']}")
    c.check(len(shapes) == 16 and {s["op"] for s in shapes} == {"qkv_proj", "o_proj", "gate_up_proj", "down_proj"},
            f"4 GEMMs x 4 token counts ({len(shapes)})")
    for s in shapes:
        flops = s["GFLOPs"] * 1e9 * s["time_s"]
        c.check(abs(flops - 2 * s["m"] * s["n"] * s["k"]) <= 1e-6 * flops and s["time_s"] > 0,
                f"{s['op']} m={s['m']}: GFLOP/s x time = 2mnk ({flops:.0f})")
    # No peak below a rate calibrate measured: the table's fractions are at most 1, and a shape
    # that set a peak is named in the source.
    top = max(shapes, key=lambda s: s["of_peak_flops"])
    c.check(all(s["of_peak_flops"] <= 1 + 1e-9 and s["of_peak_bw"] <= 1 + 1e-9 for s in shapes),
            f"no shape beats the profile's peaks (best of_peak_flops {top['of_peak_flops']:.3f})")
    c.check(abs(top["GFLOPs"] * 1e9 / hw["peak_flops"]["fp32"] - top["of_peak_flops"]) < 1e-6,
            "of_peak_flops is against the profile's peak")
    c.check(top["of_peak_flops"] < 1 - 1e-9 or f"{top['op']} m={top['m']}" in hw["source"],
            f"a shape that set the peak is named: {hw['source']}")
    # The quarter model at tp=2: qkv is (4 + 2*2) * 64 = 512 by hidden 512; o_proj 512 by 4 * 64;
    # gate_up 2 * 1024 by 512; down 512 by 1024.
    dims = {(s["op"], s["n"], s["k"]) for s in shapes}
    c.check(("qkv_proj", 512, 512) in dims and ("gate_up_proj", 2048, 512) in dims
            and ("down_proj", 512, 1024) in dims and ("o_proj", 512, 256) in dims,
            f"sharded shapes of the quarter model at tp=2: {sorted(dims)}")

    ar = det["all_reduce"]
    sizes = [p["bytes"] for p in ar["points"]]
    c.check(sizes == sorted(sizes) and sizes[-1] <= 1 << 20 and len(sizes) >= 3, f"ascending sizes to 1M: {sizes}")
    c.check(ar["wrong"] == 0, f"#wrong {ar['wrong']}")
    c.check(ar["alpha_s"] > 0 and ar["algbw_GBps"] > 0 and abs(ar["busbw_GBps"] - ar["algbw_GBps"]) < 1e-9,
            f"alpha {ar['alpha_s']:.3g} s, algbw {ar['algbw_GBps']:.3g} GB/s, busbw = algbw at n=2")
    c.check(abs(hw["link_bw"] - ar["busbw_GBps"] * 1e9) <= 1e-6 * hw["link_bw"], "link_bw is the busbw asymptote")
    c.check("all-reduce (2 ranks" in stdout and "gate_up_proj" in stdout, "the console summary")

    # The profile drives a run: its peaks, and its source, are what the results report.
    out = c.out("run-with-profile")
    c.mpi(2, ["run", "--model", "tiny", "--layers", "2", "--steps", "3", "--warmup", "1", "--context", "256",
              "--hardware", os.path.join(cal, "hardware.json"), "--out", out])
    pk = c.results(out)["points"][0]["metrics"]["peaks"]
    c.check(pk["bw"] == hw["peak_bw"] and pk["flops"] == hw["peak_flops"]["fp32"]
            and pk["source"] == hw["source"], f"the run is judged against the calibrated peaks: {pk}")

    op_profile(c, cal, hw, det, model)

    cal1 = c.out("cal1")
    c.mpi(1, ["calibrate", "--out", cal1, "--reps", "1", "--op-profile", "off"])
    hw1 = load(os.path.join(cal1, "hardware.json"))
    c.check(hw1["link_bw"] == 0 and load(os.path.join(cal1, "calibration.json"))["all_reduce"] == {},
            "one rank: no all-reduce curve, link_bw 0")
    c.check("efficiency" not in hw1 and not os.path.exists(os.path.join(cal1, "topology.json")),
            "--op-profile off on one rank: no efficiency table, no topology.json")

    # --dtype as `run` takes it: refused on the CPU with run's own line, before anything is measured.
    lines = {}
    for verb, extra in (("run", ["--model", "tiny"]), ("calibrate", ["--reps", "1", "--op-profile", "off"])):
        _, _, err = c.mpi(1, [verb, "--backend", "cpu", "--dtype", "bf16", "--out", c.out(f"{verb}-bf16")] + extra,
                          expect_rc=2)
        lines[verb] = [ln for ln in err.splitlines() if ln.startswith("tpbench:")]
    c.check(len(lines["calibrate"]) == 1 and "--dtype" in lines["calibrate"][0]
            and lines["calibrate"] == lines["run"], f"calibrate --dtype bf16 on the CPU: {lines}")
    c.finish()


if __name__ == "__main__":
    main()
