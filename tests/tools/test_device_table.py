#!/usr/bin/env python3
"""launch/device_table.py over tests/fixtures/device_check: real H200 results (shared/measured/
h200-2026-12-04: the side-by-side call's tpbench sets, run 1's serve, --check and 70B layer,
the peer reference's figures) mixed with what a device check also leaves: log files, a sweep
that timed out before writing results.json, a truncated results.json, a skipped step and a
peer line that is not JSON. The expected figures are worked out by hand from those files."""
import os
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
    expect("run decode B=1: 2.887" in out, "serve ITL against run", out)
    # MBU 0.507 x 4.8 TB/s datasheet / 4131.2 GB/s measured add kernel
    expect("of measured copy: 0.589" in out, "bandwidth against calibrate's copy", out)
    expect("prefill S=4096 MFU >= 0.60 (datasheet peak): 0.411" in out, "prefill MFU", out)
    expect("--check (check): PASS" in out, "the --check verdict", out)
    with tempfile.TemporaryDirectory() as empty:
        rc, out, err = run("--steps", f"{empty}/steps.tsv", "--calibration", f"{empty}/none.json",
                           "--peer", f"{empty}/peer.jsonl", empty)
        expect(rc == 3 and not err and out.count("no point measured it") == 6,
               "an empty call: every target FAIL, no crash", out + err)


if __name__ == "__main__":
    main()
