"""``--stop-when`` on a live case run, ``table --ci`` and the reports' bands, over one set of an
``arena_inputs`` folder made here (7 cases): a finished clean run; a run with a planted
defect, ``vs=`` the clean one; a clean run that a width rule stops early, then resumed to the
end — whose table must equal the run without a rule. Bad rules exit 2 before anything runs.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from streameval.cli.main import main
from streameval.leaderboard import build_table, load_results
from streameval.leaderboard.cells import model_cell
from streameval.leaderboard.intervals import column_intervals, read_case_run, shared_ranks
from tests.cases.arena_synth import write_arena

# one worker runs the module: its runs are shared by its tests
pytestmark = pytest.mark.xdist_group("stop-when")

# no recording: nothing here replays, and encoding every frame losslessly was a sixth of the
# module's CPU time. Keys of 4.5 s: every control column is scored (docs/methods.md#shortest-keys;
# at 0.5 s response latency was a false 0 in every case, which the width rule then "measured")
FAST = ["--no-tui", "--no-report", "--cuts", "scenedetect-content", "--seconds-per-key", "4.5",
        "--record", "off"]  # fmt: skip
ONE_SET = ["--sets", "first_view/real"]  # 7 cases
CLEAN = "procedural-world-clean"
DEFECT = "procedural-world-wrong_direction"
WIDTH_RULE = "response_latency_trans:width<=80"


def _live(defect: str) -> list[str]:
    """``demo --defect DEFECT`` under the same name, its world at 320×216: the rules and the
    tables are about the run, and rendering was a third of the module's CPU time at 640×432."""
    model = f"python:tests.runs.case_models:half_{defect}"
    return ["attach", model, "--model-name", f"procedural-world[{defect}]"]


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


@dataclass
class Runs:
    arena: Path
    base: Path
    defect_err: str
    stop_rc: int
    stop_err: str
    stopped_cases: dict[str, Any]
    stopped_manifest: list[dict[str, Any]]
    stopped_scores: int
    ci_json: dict[str, Any]
    ci_markdown: str
    ci_csv: str
    ci_terminal: str
    ci_html: str
    resume_rc: int
    new: Path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = tmp_path_factory.mktemp("stop")
    arena = write_arena(root / "arena_inputs")
    base, defect, new = root / "base", root / "defect", root / "new"
    cases = ["--cases", str(arena), *ONE_SET, *FAST]
    assert _run([*_live("clean"), *cases, "--out", str(base), "-q"])[0] == 0
    versus = ["--stop-when", f"vs={base}"]
    rc, _, defect_err = _run(
        [*_live("wrong_direction"), *cases, "--out", str(defect), "-q", *versus]
    )
    assert rc == 0, defect_err
    stop_rc, _, stop_err = _run(
        [*_live("clean"), *cases, "--out", str(new), "--stop-when", WIDTH_RULE]
    )
    model_dir = new / CLEAN
    manifest = [json.loads(line) for line in (model_dir / "manifest.jsonl").open()]
    both = [str(new), str(defect), "--include-all", "--ci"]
    html = root / "table.html"
    assert _run(["table", *both, "--html", str(html)])[0] == 0
    snapshot = Runs(
        arena,
        base,
        defect_err,
        stop_rc,
        stop_err,
        json.loads((model_dir / "cases.json").read_text()),
        manifest,
        len(list(model_dir.rglob("scores.json"))),
        json.loads(_run(["table", *both, "--json"])[1]),
        _run(["table", *both, "--markdown"])[1],
        _run(["table", *both, "--csv"])[1],
        _run(["table", *both])[1],
        html.read_text(),
        -1,
        new,
    )
    snapshot.resume_rc = _run([*_live("clean"), *cases, "--out", str(new), "-q", "--resume"])[0]
    return snapshot


def _row(table_json: dict[str, Any], model: str) -> dict[str, Any]:
    return next(r for r in table_json["rows"] if r["model"] == model)


def test_a_width_rule_stops_early_and_records_the_cases_not_run(runs: Runs) -> None:
    assert runs.stop_rc == 0, runs.stop_err
    order = runs.stopped_cases["order"]
    stopped = runs.stopped_cases["stopped"]
    after = stopped["after"]
    assert 1 <= after < len(order) == 7
    assert stopped["rule"] == WIDTH_RULE
    assert stopped["not_run"] == order[after:]
    assert runs.stopped_scores == after
    not_run = [line["case"] for line in runs.stopped_manifest if line["status"] == "not_run"]
    assert not_run == order[after:]
    assert f"met after {after} of 7 cases: {7 - after} not run" in runs.stop_err
    decided = [line for line in runs.stop_err.splitlines() if line.startswith("response_latency")]
    assert decided == [line for line in decided if f"after {after} of 7 cases" in line]
    assert len(decided) == 1 and "<= 80" in decided[0]


def test_resumed_to_the_end_the_table_equals_a_run_without_the_rule(runs: Runs) -> None:
    assert runs.resume_rc == 0
    model_dir = runs.new / CLEAN
    assert "stopped" not in json.loads((model_dir / "cases.json").read_text())
    manifest = [json.loads(line) for line in (model_dir / "manifest.jsonl").open()]
    assert sorted(line["status"] for line in manifest) == ["complete"] * 7
    tables = []
    for out in (runs.new, runs.base):
        table = build_table(load_results([out]).episodes)
        rows = (*table.rows, *(e.row for e in table.excluded))
        tables.append({r.model: {k: c.to_json() for k, c in r.cells.items()} for r in rows})
    assert tables[0] == tables[1]


def test_vs_decides_the_defect_columns_before_the_last_case(runs: Runs) -> None:
    lines = {line.split(":")[0]: line for line in runs.defect_err.splitlines() if ": " in line}
    accuracy = lines["direction_accuracy_trans"]
    assert " worse " in accuracy
    cases = int(accuracy.split("after ")[1].split(" of")[0])
    assert cases < 7


def test_table_ci_in_every_format(runs: Runs) -> None:
    clean = _row(runs.ci_json, "procedural-world[clean]")["cells"]["direction_purity_trans"]
    after = runs.stopped_cases["stopped"]["after"]
    assert (clean["cases"], clean["of"]) == (after, 7)
    assert 0.0 <= clean["low"] <= clean["high"] <= 100.0 and clean["high"] - clean["low"] > 1
    finished = _row(runs.ci_json, "procedural-world[wrong_direction]")["cells"]
    for cell in finished.values():
        if cell["value"] is not None:  # a finished run's interval is its value
            assert cell["low"] == cell["high"] == cell["value"]
            assert (cell["cases"], cell["of"]) == (7, 7)
    # overlapping intervals share ranks; apart, each has its own
    shared = [c.get("shared_rank") for r in runs.ci_json["rows"] for c in r["cells"].values()]
    assert "1–2" in shared
    assert f"{after}/7 cases" in runs.ci_markdown and "7/7 cases" in runs.ci_markdown
    assert f"{after}/7 cases" in runs.ci_terminal and "#1–2" in runs.ci_terminal
    assert f"{after}/7 cases" in runs.ci_html
    header = runs.ci_csv.splitlines()[0].split(",")
    assert "direction_purity_trans_low" in header and "direction_purity_trans_of" in header


def test_intervals_take_the_tables_own_value_after_every_case(runs: Runs) -> None:
    run = read_case_run(runs.base / CLEAN)
    assert run.finished == run.population == 7 and run.max_keys >= 1
    for n in (2, 5, 7):
        found = column_intervals(run.records[:n], 7, max_keys=run.max_keys)
        for name, interval in found.items():
            assert interval.value == model_cell(list(run.records[:n]), name).value
            assert len(interval.lows) == n
            if n == 7 and interval.value is not None:
                assert interval.low == interval.high == interval.value


def test_shared_ranks() -> None:
    ranks = shared_ranks({"a": (80.0, 90.0), "b": (85.0, 95.0), "c": (10.0, 20.0)})
    assert ranks == {"a": (1, 2), "b": (1, 2), "c": (3, 3)}


def test_the_reports_show_the_bands(runs: Runs, tmp_path: Path) -> None:
    out = tmp_path / "base"
    shutil.copytree(runs.base, out)
    assert _run(["report", str(out)])[0] == 0
    index = (out / "index.html").read_text()
    assert "Running intervals: procedural-world[clean]" in index and "7/7 cases" in index
    first = read_case_run(out / CLEAN).order[0]
    report = (out / CLEAN / first / "report.html").read_text()
    assert "Case run: intervals after this case (1 of 7)" in report


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--stop-when", "nosuch:width<=3"], "no column 'nosuch'"),
        (["--stop-when", "perceptual_quality:width<=3"], "cannot compute"),
        (["--stop-when", "width<=0"], "positive number"),
        (["--stop-when", "vs=NOWHERE"], "no such folder"),
        (["--stop-when", "vs=EMPTY"], "not a case run"),
        (["--stop-when", "vs=UNFINISHED"], "not a finished run"),
        (["--stop-when", "vs=BASE", "--sets", "third_view/style"], "other cases"),
        (["--margin", "2"], "--margin"),
    ],
)
def test_a_rule_that_can_never_be_met_exits_2_before_anything_runs(
    runs: Runs, tmp_path: Path, extra: list[str], says: str
) -> None:
    unfinished = tmp_path / "unfinished"
    shutil.copytree(runs.base / CLEAN, unfinished)
    next(unfinished.rglob("scores.json")).unlink()
    (tmp_path / "empty").mkdir()
    places = {"NOWHERE": tmp_path / "nowhere", "EMPTY": tmp_path / "empty"}
    places |= {"UNFINISHED": unfinished, "BASE": runs.base}
    extra = [f"vs={places[a[3:]]}" if a[3:] in places else a for a in extra]
    sets = [] if "--sets" in extra else ONE_SET
    out = tmp_path / "out"
    rc, _, err = _run(["demo", "--cases", str(runs.arena), *sets, *FAST, "--out", str(out), *extra])
    assert rc == 2 and says in err
    assert not out.exists() or not list(out.rglob("cases.json"))


def test_attach_checks_the_rule_too(runs: Runs, tmp_path: Path) -> None:
    argv = ["attach", "python:tests.runs.case_models:picture_world", "--cases", str(runs.arena)]
    rc, _, err = _run([*argv, *ONE_SET, *FAST, "--out", str(tmp_path), "--stop-when", "x:y"])
    assert rc == 2 and "--stop-when" in err
    rc, _, err = _run(["demo", *FAST, "--out", str(tmp_path), "--stop-when", "width<=3"])
    assert rc == 2 and "only with --cases" in err
