#!/usr/bin/env python3
"""`tpbench calibrate`: on 2 ranks it writes a hardware profile that `--hardware` accepts (a run
with it reports the calibrated peaks and says where they came from) and calibration.json whose
figures agree with themselves: GEMM FLOP/s by shape times their time give the cost model's
2mnk, the all-reduce curve is verified (#wrong 0), ascending, with a positive latency and
bandwidth and busbw = algbw * 2(n-1)/n. On 1 rank there is no curve and link_bw is 0."""
import json
import os

from tpbtest import Ctx

PROFILE_KEYS = ["name", "peak_flops", "peak_bw", "memory_bytes", "llc_bytes", "link_bw", "source",
                "measure_at_startup"]


def load(path):
    with open(path) as f:
        return json.load(f)


def main():
    c = Ctx()
    cal = c.out("cal2")
    rc, stdout, _ = c.mpi(2, ["calibrate", "--out", cal, "--max-bytes", "1M", "--reps", "2", "--name", "test-box"])
    hw = load(os.path.join(cal, "hardware.json"))
    det = load(os.path.join(cal, "calibration.json"))
    c.check(list(hw.keys()) == PROFILE_KEYS, f"hardware.json holds exactly the profile keys: {list(hw)}")
    c.check(hw["name"] == "test-box" and hw["measure_at_startup"] is False
            and hw["source"].startswith("measured by tpbench calibrate"), f"name and source: {hw['source']}")
    c.check(hw["peak_bw"] > 1e8 and hw["peak_flops"]["fp32"] > 1e8 and hw["link_bw"] > 0,
            f"positive peaks: bw {hw['peak_bw']:.3g} flops {hw['peak_flops']['fp32']:.3g} link {hw['link_bw']:.3g}")
    c.check(det["schema"] == "tpbench.calibration" and det["hardware"] == hw, "calibration.json embeds the profile")

    shapes = det["gemm_shapes"]
    c.check(len(shapes) == 16 and {s["op"] for s in shapes} == {"qkv_proj", "o_proj", "gate_up_proj", "down_proj"},
            f"4 GEMMs x 4 token counts ({len(shapes)})")
    for s in shapes:
        flops = s["GFLOPs"] * 1e9 * s["time_s"]
        c.check(abs(flops - 2 * s["m"] * s["n"] * s["k"]) <= 1e-6 * flops and s["time_s"] > 0,
                f"{s['op']} m={s['m']}: GFLOP/s x time = 2mnk ({flops:.0f})")
    # tiny at tp=2: qkv is (8 + 2*4) * 64 = 1024 by hidden 1024; gate_up 2 * 2048 by 1024.
    dims = {(s["op"], s["n"], s["k"]) for s in shapes}
    c.check(("qkv_proj", 1024, 1024) in dims and ("gate_up_proj", 4096, 1024) in dims
            and ("down_proj", 1024, 2048) in dims and ("o_proj", 1024, 512) in dims,
            f"sharded shapes of tiny at tp=2: {sorted(dims)}")

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

    cal1 = c.out("cal1")
    c.mpi(1, ["calibrate", "--out", cal1, "--reps", "1"])
    hw1 = load(os.path.join(cal1, "hardware.json"))
    c.check(hw1["link_bw"] == 0 and load(os.path.join(cal1, "calibration.json"))["all_reduce"] == {},
            "one rank: no all-reduce curve, link_bw 0")
    c.finish()


if __name__ == "__main__":
    main()
