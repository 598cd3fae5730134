#!/usr/bin/env python3
"""Function lengths (ctags start line to the closing brace at the same indent)."""
import subprocess, sys, re, os
roots = sys.argv[1:] or ["harness", "layers", "collectives"]
files = []
for r in roots:
    for d, _, fs in os.walk(r):
        files += [os.path.join(d, f) for f in fs if f.endswith((".cc", ".h", ".cu", ".cuh"))]
out = subprocess.run(["ctags", "-x", "--kinds-c++=f", "--language-force=c++", "--fields=+ne", "-o", "-"] + files,
                     capture_output=True, text=True).stdout
res = []
out2 = subprocess.run(["ctags", "--kinds-c++=f", "--language-force=c++", "--fields=+ne", "-o", "-"] + files,
                      capture_output=True, text=True).stdout
for line in out2.splitlines():
    if line.startswith("!"): continue
    parts = line.split("\t")
    name, path = parts[0], parts[1]
    fields = dict(p.split(":", 1) for p in parts[3:] if ":" in p)
    if "line" in fields and "end" in fields:
        n = int(fields["end"]) - int(fields["line"]) + 1
        res.append((n, f"{path}:{fields['line']}", name))
res.sort(reverse=True)
for n, loc, name in res[: int(os.environ.get("TOP", "15"))]:
    print(f"{n:5d} {loc} {name}")
