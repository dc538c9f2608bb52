#!/usr/bin/env bash
# mypy cannot follow setuptools' package-dir mapping, so lint type-checks a tree of symlinks laid
# out as the installed namespace (streameval/, streameval/protocol/, ...). Errors name the
# symlinks under build/typecheck/; each points at the real file in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
root=build/typecheck
rm -rf "$root"
mkdir -p "$root"
cp -rs "$PWD/streameval" "$root/streameval"
for pair in protocol:protocol replay:replay tui:tui examples:worlds; do
  cp -rs "$PWD/${pair%%:*}" "$root/streameval/${pair##*:}"
done
find "$root" -name __pycache__ -prune -exec rm -rf {} +
echo "$root/streameval"
