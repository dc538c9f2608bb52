"""A case run made in the tests: ``cases.json`` and the cases' ``scores.json`` of a 7-case,
2-set benchmark run, with known values and known times."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from streameval.cases.model import Case
from streameval.core.metric_result import MetricResult
from streameval.results.scores_file import scores_document, write_scores

ACC = "direction_accuracy_trans"
STAB = "motion_stability_trans"
SETS = {"first_view/real": 4, "third_view/style": 3}
# per case, in run order: (set, name, direction accuracy or None for an incomplete case)
RUN: list[tuple[str, str, float | None]] = [
    ("first_view/real", "000_001", 100.0),
    ("third_view/style", "000_006", 0.0),
    ("first_view/real", "001_002", 100.0),
    ("first_view/real", "000_009", None),
    ("third_view/style", "002_003", 100.0),
]


# per case: its scored direction segments (a pooled column: the table pools them, so the
# column is not the mean of the per-case values) — what POOLED writes
SEGMENTS: dict[str, tuple[float, ...]] = {
    "000_001": (1.0, 1.0, 1.0),
    "000_006": (0.0,),
    "001_002": (1.0, 0.5),
    "002_003": (1.0,),
}


def case_metrics(
    accuracy: float, segments: Sequence[float] | None = None
) -> dict[str, MetricResult]:
    details = (
        None
        if segments is None
        else {"segments": [{"status": "scored", "value": v} for v in segments]}
    )
    return {
        ACC: MetricResult.official(accuracy / 100, accuracy, details),
        STAB: MetricResult.official(0.9, 90.0),
        "revisit_memory": MetricResult.not_applicable("no revisit"),
    }


def make_case(set_name: str, name: str) -> Case:
    return Case(name, set_name, "worldmark", name[:3], int(name[4:]), "W", None, None, None)


def write_case_run(
    root: Path, cases: Sequence[tuple[str, str, float | None]], pooled: bool = False
) -> Path:
    """``root/my-model/cases.json`` for a 7-case run and the scores.json of ``cases``, each written
    60 s after the one before (the third one 10 min after: a resumed run's pause); ``pooled``:
    direction accuracy with its ``SEGMENTS`` (each case's value is their mean)."""
    model_dir = root / "my-model"
    model_dir.mkdir(parents=True)
    order = [f"{s}/{n}" for s, n, _ in RUN] + ["first_view/real/001_005", "third_view/style/x"]
    written = "2026-01-01T00:00:00+00:00"
    doc = {"model": "my-model", "order": order, "sets": SETS, "written_at": written}
    (model_dir / "cases.json").write_text(json.dumps(doc))
    start = 1767225600.0  # 2026-01-01T00:00:00Z
    when = start
    for i, (set_name, name, accuracy) in enumerate(cases):
        segments = SEGMENTS.get(name) if pooled else None
        if segments is not None:
            accuracy = 100.0 * sum(segments) / len(segments)
        metrics = case_metrics(accuracy if accuracy is not None else 0.0, segments)
        case = make_case(set_name, name).record()
        document = scores_document(
            model="my-model",
            suite="worldmark",
            episode=name,
            fps=16.0,
            frames=32,
            metrics=metrics,
            complete=accuracy is not None,
            case=case,
        )
        path = write_scores(model_dir / set_name / name, document)
        when += 600.0 if i == 2 else 60.0
        os.utime(path, (when, when))
    return model_dir / "cases.json"
