#!/usr/bin/env python3
"""The house's rules, checked on the whole source tree (docs/CONTRIBUTING.md "Layout",
docs/STYLE.md):
  1. imports run one way: the floors base/ < layers/ < collectives/ < tp_model/ < harness/, and
     no file includes a floor above its own; inside harness/ a stage includes only itself and
     the stages below it;
  2. no cycle between folders: the graph of folder -> folder includes (every folder that holds
     sources, subfolders apart) has none, so each folder can build as one library that links
     only what is below it;
  3. no folder of product code holds more than 20 source files directly;
  4. no function in the product folders is longer than 80 lines (universal-ctags gives each
     function's first and last line).
Prints every breach and exits 1 if there is any; --longest N prints the N longest functions.
"""
import argparse
import os
import re
import subprocess
import sys

SOURCE_EXT = (".cc", ".h", ".cu", ".cuh")
# The floors, bottom to top: each may include its own and those before it.
FLOORS = ("base", "layers", "collectives", "tp_model", "harness")
PRODUCT = FLOORS
# What each harness stage may include besides itself; main.cc sits above all.
BELOW = {
    "verbs": {"drive", "measure", "backends", "report", "record", "analysis", "config", "serve",
              "mpi"},
    "drive": {"backends", "report", "record", "analysis", "config", "serve", "mpi"},
    "measure": {"backends", "report", "record", "analysis", "config", "mpi"},
    "backends": {"config", "mpi"},
    "report": {"record", "analysis", "config", "mpi"},
    "record": {"analysis", "config", "serve", "mpi"},
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


def includes(root):
    """(path, included path) for every project include of the product folders."""
    for top in PRODUCT:
        for path in sources(root, top):
            text = open(os.path.join(root, path), encoding="utf-8", errors="replace").read()
            for inc in INCLUDE.findall(text):
                if inc.split("/")[0] in FLOORS:
                    yield path, inc


def include_breaches(root):
    out = []
    for path, inc in includes(root):
        parts, ip = path.split(os.sep), inc.split("/")
        if FLOORS.index(ip[0]) > FLOORS.index(parts[0]):
            out.append(f"{path}: includes {inc} ({ip[0]}/ is a floor above {parts[0]}/; the "
                       f"floors, bottom to top: {' < '.join(FLOORS)})")
            continue
        stage = parts[1] if parts[0] == "harness" and len(parts) > 2 else None
        if (stage and ip[0] == "harness" and len(ip) > 2 and ip[1] != stage
                and ip[1] not in BELOW[stage]):
            out.append(f"{path}: includes {inc} (harness/{stage} may include only "
                       f"{', '.join(sorted(BELOW[stage])) or 'itself'})")
    return out


def folder_cycles(root):
    """Every strongly connected set of folders (Tarjan) with more than one folder in it."""
    edges = {}
    for path, inc in includes(root):
        a, b = os.path.dirname(path).replace(os.sep, "/"), os.path.dirname(inc)
        if a != b and os.path.isfile(os.path.join(root, inc)):
            edges.setdefault(a, {}).setdefault(b, f"{path} -> {inc}")
    index, low, stack, on, sccs = {}, {}, [], set(), []

    def visit(v):  # recursive: the folder graph is a few dozen nodes deep at most
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                sccs.append(sorted(scc))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    out = []
    for scc in sccs:
        why = [e for a in scc for b, e in sorted(edges.get(a, {}).items()) if b in scc]
        out.append(f"folders include each other: {', '.join(scc)} ({'; '.join(why)})")
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
    breaches = include_breaches(root) + folder_cycles(root) + folder_breaches(root)
    lengths = function_lengths(root)
    breaches += [f"{loc}: {name} is {n} lines (at most {MAX_LINES})"
                 for n, loc, name in lengths if n > MAX_LINES]
    for n, loc, name in lengths[: a.longest]:
        print(f"{n:5d}  {loc}  {name}")
    for b in breaches:
        print("house:", b)
    if breaches:
        return 1
    print(f"house: imports one way ({' < '.join(FLOORS)}), no cycle between folders, "
          f"folders <= {MAX_FILES} files, functions <= {MAX_LINES} lines ({len(lengths)} functions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
