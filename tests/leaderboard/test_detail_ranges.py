"""The detail fields the model aggregates read (``metrics/aggregation.py``) are checked when
``scores.json`` is read (``schemas/scores.schema.json``): a value that cannot be — a mutation
rate of 7, a hard cut "maybe", a segment score of 5, a negative distance or error — is one
error line naming the file and the field; that file is left out of the table, the others are
tabulated, and the exit status is 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streameval.cli.main import main
from tests.leaderboard.helpers import control, official, write_episode


def _local(**details: Any) -> dict[str, Any]:
    return {"local_memory": official(80.0, {"hard_cut": False, "mutation_rate": 0.2, **details})}


def _segments(column: str, value: float) -> dict[str, Any]:
    signed = column.startswith("direction_accuracy")
    entry = control([0.5, 0.25], signed=signed, extra=1)
    entry["details"]["segments"][1]["value"] = value
    return {column: entry}


# (metrics of the bad episode, the field named in the error line, what it says)
BAD_DETAILS: dict[str, tuple[dict[str, Any], str, str]] = {
    "mutation_rate_7": (
        _local(mutation_rate=7),
        "metrics.local_memory.details.mutation_rate",
        "7 is greater than the maximum of 1",
    ),
    "mutation_rate_-3": (
        _local(mutation_rate=-3),
        "metrics.local_memory.details.mutation_rate",
        "-3 is less than the minimum of 0",
    ),
    "hard_cut_maybe": (
        _local(hard_cut="maybe"),
        "metrics.local_memory.details.hard_cut",
        "'maybe' is not of type 'boolean'",
    ),
    "accuracy_segment_5": (
        _segments("direction_accuracy_trans", 5),
        "metrics.direction_accuracy_trans.details.segments.1.value",
        "5 is greater than the maximum of 1",
    ),
    "purity_segment_-3": (
        _segments("direction_purity_rot", -3),
        "metrics.direction_purity_rot.details.segments.1.value",
        "-3 is less than the minimum of 0",
    ),
    "revisit_pair_distance_-50": (
        {"revisit_memory": official(80.0, {"pair_distances": [-50]})},
        "metrics.revisit_memory.details.pair_distances.0",
        "-50 is less than the minimum of 0",
    ),
    "global_e_-0.5": (
        {"global_memory": official(50.0, {"e": -0.5})},
        "metrics.global_memory.details.e",
        "-0.5 is less than the minimum of 0",
    ),
}


def _good_metrics() -> dict[str, Any]:
    return {
        **_local(),
        "direction_accuracy_trans": control([0.5, -0.25], signed=True, extra=1),
        "direction_purity_rot": control([0.5, 0.25], extra=1),
        "revisit_memory": official(80.0, {"pair_distances": [0.2, 0.3]}),
        "global_memory": official(50.0, {"e": 0.05}),
    }


@pytest.mark.parametrize("case", sorted(BAD_DETAILS))
def test_table_refuses_impossible_detail_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    metrics, field, says = BAD_DETAILS[case]
    write_episode(tmp_path, "honest", "000", _good_metrics())
    bad = write_episode(tmp_path, "cheater", "000", metrics)
    code = main(["table", str(tmp_path), "--markdown", "--include-all"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    errors = [line for line in captured.err.splitlines() if line.startswith("error: ")]
    assert code == 2
    assert errors == [f"error: {bad}: {field}: {says}"], errors
    assert "honest" in captured.out and "cheater" not in captured.out


def test_possible_detail_values_still_tabulate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the edges of each range, a null mutation rate (a cut without a countable pair), null
    # local distances (not embedded), a dropped segment's out-of-range value: all as written
    metrics = _good_metrics()
    metrics["local_memory"] = official(
        0.0, {"hard_cut": True, "mutation_rate": None, "pair_distances": [0.0, None, 2.0]}
    )
    metrics["direction_accuracy_trans"] = control([-1.0, 1.0], signed=True, extra=2)
    metrics["global_memory"] = official(100.0, {"e": 0.0})
    write_episode(tmp_path, "edge", "000", metrics)
    write_episode(tmp_path, "edge", "001", _local(mutation_rate=1))
    assert main(["table", str(tmp_path), "--markdown", "--include-all"]) == 0
    assert "edge" in capsys.readouterr().out
