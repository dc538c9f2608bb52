#!/usr/bin/env bash
# The default stack's flame graph (docs/benchmarks.md#default-stack-bfloat16-cuts): py-spy
# attached to the evaluator and to its TransNetV2 worker process while bench/memory.py replays
# the 120 s rollout flat out with the default stack, both processes' collapsed stacks in one
# SVG (tools/flamegraph.py). py-spy's --subprocesses does not follow the worker (a
# `python -c` child talking over pipes), so each process gets a recorder of its own.
#
# Usage: bench/flame.sh [OUT.svg] [ROLLOUT_DIR]   (needs py-spy: pip install py-spy)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-flame-default-stack.svg}
keep=${2:-$(mktemp -d)}
py=${PYTHON:-.venv/bin/python}
spy=${PYSPY:-$(command -v py-spy || echo .venv/bin/py-spy)}
work=$(mktemp -d)
run="cpu embedding + transnetv2"

# render the rollout first, so that the profile holds the replay only
"$py" bench/memory.py --keep "$keep" --only "memory off" >/dev/null
"$py" bench/memory.py --keep "$keep" --only "$run" >"$work/run.log" 2>&1 &
main=$!
"$spy" record --rate 100 --format raw -o "$work/main.txt" --pid "$main" >/dev/null 2>&1 &
recorder=$!
worker=""
for _ in $(seq 1 150); do
  worker=$(pgrep -P "$main" -f transnet_worker_main | head -1 || true)
  [ -n "$worker" ] && break
  sleep 0.1
done
if [ -n "$worker" ]; then
  "$spy" record --rate 100 --format raw -o "$work/worker.txt" --pid "$worker" >/dev/null 2>&1 || true
fi
wait "$main"
wait "$recorder" || true
cat "$work/run.log"
{
  sed 's/^/evaluator process (bench\/memory.py, default stack);/' "$work/main.txt"
  if [ -s "$work/worker.txt" ]; then
    sed 's/^/TransNetV2 worker process;/' "$work/worker.txt"
  fi
} >"$work/both.txt"
"$py" tools/flamegraph.py "$work/both.txt" "$out" --min-share 0.005 \
  --title "default stack, 120 s rollout replayed flat out (py-spy, 100 Hz, both processes)"
echo "wrote $out (collapsed stacks in $work/both.txt)"
