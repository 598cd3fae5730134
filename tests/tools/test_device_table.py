#!/usr/bin/env python3
"""launch/device_table.py over tests/fixtures/device_check: real H200 results (shared/measured/
h200-2026-12-04: the side-by-side call's tpbench sets, run 1's serve, --check and 70B layer,
the peer reference's figures) mixed with what a device check also leaves: log files, a sweep
that timed out before writing results.json, a truncated results.json, a skipped step and a
peer line that is not JSON. The expected figures are worked out by hand from those files."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLE = os.path.join(ROOT, "launch", "device_table.py")
FIX = os.path.join(ROOT, "tests", "fixtures", "device_check")


def run(*args):
    p = subprocess.run([sys.executable, TABLE, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def expect(cond, what, out):
    if not cond:
        print(f"FAIL {what}\n{out}")
        sys.exit(1)
    print(f"ok   {what}")


CUDNN_LINE = ("attention: cuDNN 9.15.0 fused SDPA (cudnn-frontend 1.32.0) for bf16 and fp16 "
              "prefill, decode and serve's mixed steps (paged, ragged) where cuDNN builds the "
              "step's graph; native kernels for fp32; 3 graph(s) built since the device opened")


def scaled_set(src, dst, factor, mixed=None):
    """A copy of the set `src` recorded under --attention cudnn, every step `factor` times as
    long (a made-up speed-up: what the table does with such a set, not a measurement). Its
    ranks' kernel_choices say cuDNN ran, and `mixed` (serve) is their mixed-step attention line,
    as layers/cuda/cuda_device.cc writes it."""
    with open(os.path.join(src, "results.json")) as f:
        doc = json.load(f)
    doc["config"]["attention"] = "cudnn"
    for p in doc["points"]:
        ranks = p.get("ranks") or [{"rank": 0}]
        for r in ranks:
            r["kernel_choices"] = [CUDNN_LINE] + ([mixed] if mixed else [])
        p["ranks"] = ranks
        m = p["metrics"]
        for k in ("p50", "mean"):
            m["step_time_s"][k] *= factor
            if "itl_s" in m:  # a serve point
                m["itl_s"][k] *= factor
        for k in ("mbu", "mfu"):
            m[k] /= factor
    os.makedirs(dst)
    with open(os.path.join(dst, "results.json"), "w") as f:
        json.dump(doc, f)


def cudnn_column():
    """Sets under --attention cudnn: their own column, and the step targets take the faster."""
    with tempfile.TemporaryDirectory() as d:
        shutil.copytree(FIX, d, dirs_exist_ok=True)
        scaled_set(f"{FIX}/decode-eager", f"{d}/decode-cudnn", 0.7)
        scaled_set(f"{FIX}/prefill", f"{d}/prefill-cudnn", 0.65)
        scaled_set(f"{FIX}/serve", f"{d}/serve-cudnn", 0.3,
                   "mixed-step attention: cuDNN paged 310 calls, native 0 calls")
        rc, out, err = run("--steps", f"{d}/steps.tsv", "--calibration", f"{d}/calibration.json",
                           "--peer", f"{d}/peer.jsonl", d)
        expect("tpb cudnn" in out, "a tpb cudnn column", out)
        # decode B=1: 5.801 x 0.7 = 4.061 ms against torch.compile+graph's 4.235 ms = 0.959
        expect("PASS  decode B=1 step <= 1.06x torch.compile+graph: 0.959" in out,
               "B=1 judged on the faster attention", out)
        # graph/eager stays native against native: the cudnn set is no eager baseline
        expect("every batch: 1.168, 1.084, 1.049, 0.982" in out, "graph target on native sets", out)
        # prefill S=4096: MFU 0.411 / 0.65 = 0.632
        expect("PASS  prefill S=4096 MFU >= 0.60 (datasheet peak): 0.632" in out,
               "prefill MFU of the faster attention", out)
        # serve under cuDNN against run under cuDNN: 16.748 x 0.3 / 4.061 = 1.237, the better
        # of that and native's 2.887
        expect("FAIL  serve ITL p50 at conc 1 <= 1.15x run decode B=1 (same attention kernels): "
               "1.237" in out, "serve against run under the same attention", out)


def refused_paged_graph():
    """A serve set asked for --attention cudnn whose kernel_choices show the native paged
    kernels ran (cuDNN refused the graph; the line as test_sdpa_paged_plan.cc pins
    paged_use_line's): no cuDNN point, whatever config.attention says. Its
    made-up ITL (x0.3) would pass the serve target if it were judged as cuDNN's (1.237 against
    cuDNN's run); native's pair (2.887) is all the target has. And a set asked for cuDNN that
    recorded no kernel choices is judged in neither column."""
    with tempfile.TemporaryDirectory() as d:
        shutil.copytree(FIX, d, dirs_exist_ok=True)
        scaled_set(f"{FIX}/decode-eager", f"{d}/decode-cudnn", 0.7)
        scaled_set(f"{FIX}/serve", f"{d}/serve-cudnn", 0.3,
                   "mixed-step attention: cuDNN paged 0 calls, native 310 calls (cuDNN refused "
                   "the step's paged graph: cudnn sdpa: check_support: no engine)")
        rc, out, err = run("--steps", f"{d}/steps.tsv", "--calibration", f"{d}/calibration.json",
                           "--peer", f"{d}/peer.jsonl", d)
        expect("FAIL  serve ITL p50 at conc 1 <= 1.15x run decode B=1 (same attention kernels): "
               "2.887" in out, "a refused paged graph is not in the cuDNN set", out)
        expect("cuDNN refused the paged graph (serve-cudnn," in out and "310 of 310" in out
               and "no engine" in out, "the table says the refusal", out)
        expect("PASS  decode B=1 step <= 1.06x torch.compile+graph: 0.959" in out,
               "the dense cuDNN set is still cuDNN's", out)
        with open(f"{d}/serve-cudnn/results.json") as f:
            doc = json.load(f)
        for p in doc["points"]:
            for r in p["ranks"]:
                del r["kernel_choices"]
        with open(f"{d}/serve-cudnn/results.json", "w") as f:
            json.dump(doc, f)
        rc, out, err = run("--steps", f"{d}/steps.tsv", "--calibration", f"{d}/calibration.json",
                           "--peer", f"{d}/peer.jsonl", d)
        expect("(same attention kernels): 2.887" in out and "cudnn?" in out,
               "asked for cuDNN, nothing recorded which ran: in neither set", out)


def slow_op_set():
    """A set run with --inject slow_op (made up from decode-eager's B=1 point: attention's time
    per step x2, the step x1.2): the table sets the op against the point without it, and the
    slowed point is never a step of the model the targets judge."""
    with tempfile.TemporaryDirectory() as d:
        shutil.copytree(FIX, d, dirs_exist_ok=True)
        src = f"{d}/decode-eager/results.json"
        with open(src) as f:
            doc = json.load(f)
        doc["points"] = doc["points"][:1]
        doc["points"][0]["ops"] = [{"op": "attention", "time_s_per_step": 0.001}]
        with open(src, "w") as f:
            json.dump(doc, f)
        p = doc["points"][0]
        p["params"]["inject"] = ["rank=0:slow_op=attention@2"]
        p["ops"][0]["time_s_per_step"] = 0.002
        p["metrics"]["step_time_s"]["p50"] *= 1.2
        os.makedirs(f"{d}/slow-op")
        with open(f"{d}/slow-op/results.json", "w") as f:
            json.dump(doc, f)
        rc, out, err = run("--steps", f"{d}/steps.tsv", "--calibration", f"{d}/calibration.json",
                           "--peer", f"{d}/peer.jsonl", d)
        expect("slow_op (slow-op): attention x2.00 per step against the point without it "
               "(asked x2); step x1.20" in out, "the slowed op against the point without it", out)
        expect("decode B=1 step <= 1.06x torch.compile+graph: 1.370" in out,
               "the slowed point is not judged as the model's step", out)


def main():
    rc, out, err = run("--steps", f"{FIX}/steps.tsv", "--calibration", f"{FIX}/calibration.json",
                       "--peer", f"{FIX}/peer.jsonl", FIX)
    expect(rc == 3 and not err, "exit 3 (targets missed), nothing on stderr", out + err)
    expect("points-decode.log" not in out and "serve.log" not in out, "log files are not result sets", out)
    expect("broken        results.json unreadable" in out, "a truncated results.json is a row", out)
    expect("sweep-timeout rc=124" in out and "layer-check rc=skipped" in out, "steps listed", out)
    tgt = [ln for ln in out.splitlines() if ln.startswith(("PASS", "FAIL"))]
    expect(len(tgt) == 6, "six targets", out)
    # decode B=1: tpbench eager 5.801 ms (decode-eager) / torch.compile+graph 4.235 ms = 1.370;
    # the 70B layer's B=1 (0.543 ms) and the 2-layer --check point must not be judged.
    expect("FAIL  decode B=1 step <= 1.06x torch.compile+graph: 1.370" in out, "B=1 vs compile", out)
    # B=64: min(eager 9.355, graph 9.813) / 6.661 = 1.405
    expect("decode B=64 step <= 1.06x torch.compile+graph: 1.405" in out, "B=64 vs compile", out)
    # graph/eager per batch: 6.773/5.801, 6.703/6.182, 9.813/9.355, 19.970/20.339
    expect("every batch: 1.168, 1.084, 1.049, 0.982" in out, "graph against eager", out)
    # serve ITL p50 16.748 ms / run B=1 5.801 ms
    expect("run decode B=1 (same attention kernels): 2.887" in out, "serve ITL against run", out)
    # MBU 0.507 x 4.8 TB/s datasheet / 4131.2 GB/s measured add kernel
    expect("of measured copy: 0.589" in out, "bandwidth against calibrate's copy", out)
    expect("prefill S=4096 MFU >= 0.60 (datasheet peak): 0.411" in out, "prefill MFU", out)
    expect("--check (check): PASS" in out, "the --check verdict", out)
    cudnn_column()
    refused_paged_graph()
    slow_op_set()
    with tempfile.TemporaryDirectory() as empty:
        rc, out, err = run("--steps", f"{empty}/steps.tsv", "--calibration", f"{empty}/none.json",
                           "--peer", f"{empty}/peer.jsonl", empty)
        expect(rc == 3 and not err and out.count("no point measured it") == 6,
               "an empty call: every target FAIL, no crash", out + err)


if __name__ == "__main__":
    main()
