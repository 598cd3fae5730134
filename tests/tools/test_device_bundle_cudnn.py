#!/usr/bin/env python3
"""launch/device-bundle.sh refuses to pack a build without cuDNN attention (issue 54, 19): with
no cudnn-frontend layers/cuda/cudnn/CMakeLists.txt compiles a stub that refuses --attention
cudnn only once it runs on the GPU. `device-bundle.sh --check-cache CACHE`, the check each of
its builds passes after configuring, must exit 2 with one line naming the variable for a cache
whose cudnn-frontend or cudnn.h was not found, and 0 for one that found both."""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "launch", "device-bundle.sh")
FOUND = {"TPB_CUDNN_FRONTEND_INCLUDE_DIR": "/src/.deps/cudnn-frontend/include",
         "TPB_CUDNN_INCLUDE_DIR": "/usr/local/cuda/include"}


def check(cache_vars):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("CMAKE_BUILD_TYPE:STRING=Release\n")
        f.writelines(f"{k}:PATH={v}\n" for k, v in cache_vars.items())
    try:
        r = subprocess.run(["bash", SCRIPT, "--check-cache", f.name], capture_output=True,
                           text=True, timeout=30)
    finally:
        os.unlink(f.name)
    return r.returncode, r.stderr.strip()


def main():
    bad = []
    rc, err = check(FOUND)
    if rc != 0:
        bad.append(f"both found: exit {rc} ({err})")
    for var in FOUND:
        for broken in ({**FOUND, var: f"{var}-NOTFOUND"}, {k: v for k, v in FOUND.items() if k != var}):
            rc, err = check(broken)
            if rc != 2 or var not in err or len(err.splitlines()) != 1:
                bad.append(f"{var} missing: exit {rc}, stderr {err!r} (want exit 2, one line naming it)")
    for b in bad:
        print("FAIL " + b)
    print("ok: the bundle refuses a cuDNN stub" if not bad else f"{len(bad)} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
