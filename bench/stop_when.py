"""Early verdicts on a realistic pair of runs (docs/methods.md#running-intervals-over-a-case-run):
the procedural world clean and with a planted defect, over the same case set of ``--cases``
(default 64) cases, each run live to the end with ``streameval demo --cases``.

1. The defect run is made with ``--stop-when vs=CLEAN``: its own lines say, for each column, the
   verdict and after how many cases of the recorded (seeded) order it came.
2. From the two runs' per-case scores (measured, not drawn from a model of them), ``--orders``
   random orders of the same cases — each a run that could have happened — give the
   distribution of the case at which ``vs=`` decides each column, and at which
   ``COLUMN:width<=W`` would stop on the clean run; the seeded order's own figure beside it.

The case set is a manifest of ``--images`` generated pictures × WorldMark actions (a mix of
translation and turn actions), each case 0.5 s per key.

Measured (64 cases, swap_lr, 200 orders; docs/benchmarks.md#early-verdicts): the defect's
columns (rot direction accuracy, rot stability) decided ``worse`` after 13 cases in the seeded
order, median 20 and 90th percentile 26–33 over orders; paired, at 63.

Usage: python bench/stop_when.py [--cases 64] [--defect swap_lr] [--orders 200] [--keep DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from streameval.cli.main import main as cli
from streameval.leaderboard.intervals import column_intervals, read_case_run
from streameval.metrics.anytime import decide

ACTIONS = (1, 2, 3, 4, 5, 6, 9, 10, 11, 12, 14, 15)  # translations, turns and mixes
RUN = ["--no-tui", "--no-report", "-q", "--cuts", "scenedetect-content", "--seconds-per-key"]
WIDTHS = (10.0, 20.0)


def write_cases(root: Path, count: int) -> Path:
    """``count`` cases: generated pictures (smooth colour fields with shapes), one action each."""
    import cv2

    rng = np.random.default_rng(0)
    lines = []
    images = max(1, count // 8)
    for i in range(images):
        field = cv2.resize(rng.random((6, 8, 3)).astype(np.float32) * 255, (160, 120))
        for _ in range(30):
            x, y, r = int(rng.integers(0, 160)), int(rng.integers(0, 120)), int(rng.integers(4, 20))
            cv2.circle(field, (x, y), r, tuple(float(c) for c in rng.random(3) * 255), -1)
        cv2.imwrite(str(root / f"img{i:02d}.png"), field.astype(np.uint8))
    for n in range(count):
        action = ACTIONS[n % len(ACTIONS)]
        image = f"img{n % images:02d}.png"
        lines.append({"case": f"c{n:03d}", "image": image, "prompt": "A town.", "actions": action})
    manifest = root / "cases.jsonl"
    manifest.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return manifest


def run(argv: list[str]) -> str:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli(argv)
    if code != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {code}\n{err.getvalue()}")
    return err.getvalue()


def first_decided(lows: np.ndarray, highs: np.ndarray, base: float, margin: float) -> int:
    for n, (low, high) in enumerate(zip(lows, highs, strict=True), start=1):
        if decide(low - base, high - base, margin) != "undecided":
            return n
    return len(lows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=64)
    parser.add_argument("--defect", default="swap_lr")
    parser.add_argument("--orders", type=int, default=200)
    parser.add_argument("--seconds-per-key", default="0.5")
    parser.add_argument("--margin", type=float, default=1.0)
    parser.add_argument("--keep", type=Path, default=None, help="keep (or reuse) the runs here")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="stop_when_"))
    root.mkdir(parents=True, exist_ok=True)
    manifest = write_cases(root, args.cases)
    clean, defect = root / "clean", root / f"defect-{args.defect}"
    started = time.perf_counter()
    if not (clean / "procedural-world-clean" / "cases.json").is_file():
        run(["demo", "--cases", str(manifest), "--out", str(clean), *RUN, args.seconds_per_key])
    live = ""
    defect_dir = defect / f"procedural-world-{args.defect}"
    if not (defect_dir / "cases.json").is_file():
        live = run(
            ["demo", "--defect", args.defect, "--cases", str(manifest), "--out", str(defect),
             *RUN, args.seconds_per_key, "--stop-when", f"vs={clean}"]
        )  # fmt: skip
    print(f"runs: {time.perf_counter() - started:.0f} s ({root})")
    print(f"live, seeded order (--stop-when vs={clean.name}):")
    print("\n".join(f"  {line}" for line in live.splitlines() if " of " in line) or "  (reused)")

    base_run = read_case_run(clean / "procedural-world-clean")
    new_run = read_case_run(defect_dir)
    size = new_run.population
    base_values = {
        name: i.value
        for name, i in column_intervals(base_run.records, size, max_keys=base_run.max_keys).items()
        if i.value is not None
    }
    by_case = new_run.by_case()
    base_by_case = base_run.by_case()
    keys = list(new_run.order)
    rng = np.random.default_rng(0)
    orders = [keys, *([list(rng.permutation(keys)) for _ in range(args.orders)])]
    print(
        f"\n{args.orders} random orders of the {size} cases; verdict vs clean, margin "
        f"{args.margin:g} points (cases to the verdict: seeded order, median, 90th pct)"
    )
    header = f"{'column':<24} {'clean':>7} {'defect':>7}  {'verdict':>8}  {'seeded':>6} "
    header += f"{'median':>6} {'p90':>5}  {'paired median':>13}"
    print(header)
    print("-" * len(header))
    columns = list(base_values)
    found: dict[str, list[int]] = {c: [] for c in columns}
    paired: dict[str, list[int]] = {c: [] for c in columns}
    widths: dict[tuple[str, float], list[int]] = {(c, w): [] for c in columns for w in WIDTHS}
    for index, order in enumerate(orders):
        records = [by_case[k] for k in order]
        unpaired = column_intervals(records, size, columns=columns, max_keys=new_run.max_keys)
        clean_records = [base_by_case[k] for k in order]
        clean_iv = column_intervals(
            clean_records, size, columns=columns, max_keys=base_run.max_keys
        )
        with_pairs = (
            column_intervals(
                records, size, columns=columns, max_keys=new_run.max_keys,
                baseline=base_by_case, case_keys=order,
            )
            if index < 1 + min(args.orders, 50)
            else None
        )  # fmt: skip
        for c in columns:
            lows, highs = np.array(unpaired[c].lows), np.array(unpaired[c].highs)
            found[c].append(first_decided(lows, highs, base_values[c], args.margin))
            if with_pairs is not None:
                p = with_pairs[c]
                paired[c].append(
                    first_decided(np.array(p.lows), np.array(p.highs), base_values[c], args.margin)
                )
            width = np.array(clean_iv[c].highs) - np.array(clean_iv[c].lows)
            for w in WIDTHS:
                met = np.flatnonzero(width <= w)
                widths[(c, w)].append(int(met[0]) + 1 if met.size else size)
    final = column_intervals([by_case[k] for k in keys], size, columns=columns)
    for c in columns:
        value = final[c].value
        verdict = decide(value - base_values[c], value - base_values[c], args.margin)
        runs = np.array(found[c][1:])
        print(
            f"{c:<24} {base_values[c]:7.2f} {value:7.2f}  {verdict:>8}  {found[c][0]:>6} "
            f"{np.median(runs):6.0f} {np.percentile(runs, 90):5.0f}  "
            f"{np.median(paired[c][1:]):13.0f}"
        )
    print(f"\ncases to width<=W on the clean run (seeded order / median over orders), of {size}:")
    for c in columns:
        parts = [
            f"<={w:g}: {widths[(c, w)][0]:>3} / {np.median(widths[(c, w)][1:]):3.0f}"
            for w in WIDTHS
        ]
        print(f"  {c:<24} " + "   ".join(parts))
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
