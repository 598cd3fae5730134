"""Shared helpers for tpbench's multi-rank tests: each test_*.py is one ctest case that runs the
real binary under mpirun (args: --tpbench --mpirun --source --work) and exits non-zero on any
failed check. Nothing here skips: a test that cannot run fails."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time


class Ctx:
    def __init__(self):
        ap = argparse.ArgumentParser()
        ap.add_argument("--tpbench", required=True)
        ap.add_argument("--mpirun", default="mpirun")
        ap.add_argument("--source", required=True)
        ap.add_argument("--work", required=True)
        a = ap.parse_args()
        self.tpbench, self.mpirun, self.source, self.work = a.tpbench, a.mpirun, a.source, a.work
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work, exist_ok=True)
        self.failures = []
        self.env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                        OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                        OMPI_MCA_rmaps_base_oversubscribe="1")

    def out(self, name):
        return os.path.join(self.work, name)

    def mpi(self, np, args, timeout=300, expect_rc=0, bind="none"):
        """Runs tpbench under mpirun; returns (rc, stdout, stderr). bind: mpirun --bind-to."""
        cmd = [self.mpirun, "-np", str(np), "--oversubscribe", "--bind-to", bind, self.tpbench] + args
        t0 = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True, env=self.env, timeout=timeout)
        # Each call's wall time in the log, so that the CI budget can be spent knowingly.
        print(f"     {time.monotonic() - t0:6.1f} s  np {np}: {' '.join(args)[:110]}", flush=True)
        if expect_rc is not None and p.returncode != expect_rc:
            self.fail(f"{' '.join(cmd)} -> rc {p.returncode}, expected {expect_rc}\n"
                      f"stdout: {p.stdout[-3000:]}\nstderr: {p.stderr[-3000:]}")
        return p.returncode, p.stdout, p.stderr

    def results(self, out_dir):
        with open(os.path.join(out_dir, "results.json")) as f:
            return json.load(f)

    def check_contract(self, out_dir, ranks=None):
        cmd = [sys.executable, os.path.join(self.source, "..", "shared", "tools", "check_results.py"), out_dir]
        local = os.path.join(self.source, "tests", "tools", "check_results.py")
        if not os.path.exists(cmd[1]):
            cmd[1] = local  # the vendored copy travels with the repository
        if ranks is not None:
            cmd += ["--expect-ranks", str(ranks)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        self.check(p.returncode == 0, f"check_results.py {out_dir}: {p.stdout}{p.stderr}")

    def check(self, cond, msg):
        print(("ok   " if cond else "FAIL ") + msg.splitlines()[0] if msg else "", flush=True)
        if not cond:
            self.failures.append(msg)

    def fail(self, msg):
        self.check(False, msg)

    def finish(self):
        if self.failures:
            print(f"\n{len(self.failures)} failure(s):")
            for f in self.failures:
                print(" -", f)
            sys.exit(1)
        print("all checks passed")
        sys.exit(0)
