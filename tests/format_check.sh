#!/usr/bin/env bash
# Fails when a project C++/CUDA file differs from .clang-format's layout.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.cc' '*.h' '*.cu' '*.cuh' 2>/dev/null || true)
[ -n "$files" ] || { echo "no files to check"; exit 0; }
bad=0
for f in $files; do
  if ! diff -q <(clang-format --style=file "$f") "$f" >/dev/null; then
    echo "not formatted: $f (run: clang-format -i $f)"
    bad=1
  fi
done
[ $bad -eq 0 ] && echo "$(echo "$files" | wc -l) files formatted"
exit $bad
