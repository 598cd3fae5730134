#!/usr/bin/env python3
"""`tpbench calibrate --from-aiconfigurator SYSTEM ENGINE VERSION` runs the shipped
results/aiconfigurator_import.py and passes its exit code through: against a made-up systems/
tree (TPB_AIC_SYSTEMS_DIR), so the answer does not hang on whether AIConfigurator or pandas is
installed here, a wrong SYSTEM or VERSION is one line naming it, exit 2. A measurement option
beside it is tpbench's own one line, exit 2."""
import json
import os
import sys

from tpbtest import Ctx


def main():
    c = Ctx()
    systems = os.path.join(c.work, "systems")
    os.makedirs(os.path.join(systems, "data", "h200_sxm", "gemm", "vllm", "0.24.0"), exist_ok=True)
    with open(os.path.join(systems, "h200_sxm.yaml"), "w") as f:
        json.dump({"gpu": {}, "misc": {"nccl_version": "2.26.2"}}, f)
    c.env.update(TPB_AIC_SYSTEMS_DIR=systems, TPB_AIC_PYTHON=sys.executable)
    out = c.out("tables")
    cases = [(["h999_sxm", "vllm", "0.24.0"], "aiconfigurator_import: SYSTEM: 'h999_sxm' is not one of h200_sxm"),
             (["h200_sxm", "vllm", "0.9"], "aiconfigurator_import: VERSION: '0.9' has no vllm"),
             (["h200_sxm", "vllm", "0.24.0", "--reps", "3"], "tpbench: error: --from-aiconfigurator:")]
    for words, want in cases:
        _, stdout, err = c.mpi(1, ["calibrate", "--out", out, "--from-aiconfigurator"] + words, expect_rc=2)
        lines = [ln for ln in (stdout + err).splitlines() if ln.startswith(("tpbench", "aiconfigurator_import"))]
        c.check(len(lines) == 1 and lines[0].startswith(want), f"{words}: {lines}")
    c.check(not os.path.exists(out), "nothing written")
    c.finish()


if __name__ == "__main__":
    main()
