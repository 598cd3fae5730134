#!/usr/bin/env python3
"""The house's rules, checked on the source tree (README "Layout", docs/STYLE.md):
  1. imports run one way: base/, layers/ and collectives/ never include harness/, and a harness stage
     includes only itself and the stages below it;
  2. no folder of product code holds more than 20 source files directly;
  3. no function in base/, harness/, layers/ or collectives/ is longer than 80 lines (universal-ctags
     gives each function's first and last line).
Prints every breach and exits 1 if there is any; --longest N prints the N longest functions.
"""
import argparse
import os
import re
import subprocess
import sys

SOURCE_EXT = (".cc", ".h", ".cu", ".cuh")
PRODUCT = ("base", "harness", "layers", "collectives")
# What each stage may include besides itself; main.cc sits above all.
BELOW = {
    "verbs": {"drive", "measure", "backends", "report", "record", "analysis", "config", "serve",
              "mpi"},
    "drive": {"backends", "report", "record", "analysis", "config", "serve", "mpi"},
    "measure": {"backends", "report", "record", "analysis", "config", "mpi"},
    "backends": {"config", "mpi"},
    "report": {"record", "analysis", "config", "mpi"},
    "record": {"analysis", "config", "mpi"},
    "analysis": set(),
    "serve": {"analysis"},
    "config": {"serve"},
    "mpi": set(),
}
MAX_FILES = 20
MAX_LINES = 80
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(root, top):
    for d, _, files in os.walk(os.path.join(root, top)):
        for f in sorted(files):
            if f.endswith(SOURCE_EXT):
                yield os.path.relpath(os.path.join(d, f), root)


def include_breaches(root):
    out = []
    for top in PRODUCT:
        for path in sources(root, top):
            text = open(os.path.join(root, path), encoding="utf-8", errors="replace").read()
            parts = path.split(os.sep)
            stage = parts[1] if top == "harness" and len(parts) > 2 else None
            for inc in INCLUDE.findall(text):
                ip = inc.split("/")
                if ip[0] != "harness":
                    continue
                if top != "harness":
                    out.append(f"{path}: includes {inc} (base/, layers/ and collectives/ sit below harness/)")
                elif stage and len(ip) > 2 and ip[1] != stage and ip[1] not in BELOW[stage]:
                    out.append(f"{path}: includes {inc} (harness/{stage} may include only "
                               f"{', '.join(sorted(BELOW[stage])) or 'itself'})")
    return out


def folder_breaches(root):
    out = []
    for top in PRODUCT:
        for d, _, files in os.walk(os.path.join(root, top)):
            n = sum(f.endswith(SOURCE_EXT) for f in files)
            if n > MAX_FILES:
                out.append(f"{os.path.relpath(d, root)}: {n} source files (at most {MAX_FILES})")
    return out


def function_lengths(root):
    files = [p for top in PRODUCT for p in sources(root, top)]
    cmd = ["ctags", "--kinds-c++=f", "--language-force=c++", "--fields=+ne", "-o", "-"] + files
    try:
        text = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"check_house: universal-ctags is needed for function lengths ({e})")
    rows = []
    for line in text.splitlines():
        if line.startswith("!"):
            continue
        parts = line.split("\t")
        fields = dict(p.split(":", 1) for p in parts[3:] if ":" in p)
        if "line" in fields and "end" in fields:
            n = int(fields["end"]) - int(fields["line"]) + 1
            rows.append((n, f"{parts[1]}:{fields['line']}", parts[0]))
    return sorted(rows, reverse=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--longest", type=int, default=0)
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    breaches = include_breaches(root) + folder_breaches(root)
    lengths = function_lengths(root)
    breaches += [f"{loc}: {name} is {n} lines (at most {MAX_LINES})"
                 for n, loc, name in lengths if n > MAX_LINES]
    for n, loc, name in lengths[: a.longest]:
        print(f"{n:5d}  {loc}  {name}")
    for b in breaches:
        print("house:", b)
    if breaches:
        return 1
    print(f"house: imports one way, folders <= {MAX_FILES} files, functions <= {MAX_LINES} lines "
          f"({len(lengths)} functions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
