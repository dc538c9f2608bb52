"""The results format module: writer and reader agree, and reading needs no OpenCV, PyAV or
pipeline (``streameval table`` runs where only results exist)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from streameval.core.metric_result import MetricResult
from streameval.errors import BadInputError
from streameval.results.scores_file import (
    SCORES_FORMAT,
    load_episode,
    load_results,
    scores_document,
    write_scores,
)

HEAVY = ("cv2", "av", "streameval.engine.pipeline", "streameval.perception", "torch", "textual")


def _doc(episode: str = "e1", **metrics: MetricResult) -> dict[str, object]:
    return scores_document(
        model="m",
        suite="s",
        episode=episode,
        fps=16.0,
        frames=10,
        metrics=metrics,
        errors=[{"source": "recorder", "message": "disk full", "fatal": False}],
    )


def test_written_document_reads_back(tmp_path: Path) -> None:
    path = write_scores(
        tmp_path / "r",
        _doc(
            a=MetricResult.official(0.5, 50.0, {"k": [1, 2]}),
            b=MetricResult.not_applicable("frozen"),
            c=MetricResult.missing("no backend"),
        ),
    )
    assert json.loads(path.read_text())["format"] == SCORES_FORMAT
    record = load_episode(path)
    assert (record.model, record.suite, record.episode, record.frames) == ("m", "s", "e1", 10)
    assert record.metrics["a"] == MetricResult(0.5, 50.0, "official", None, {"k": [1, 2]})
    assert record.metrics["b"].status == "not_applicable" and record.metrics["b"].reason == "frozen"
    assert record.metrics["c"].status == "missing" and record.metrics["c"].raw is None


def test_writer_refuses_a_foreign_document_and_nan(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"not a streameval\.scores/2"):
        write_scores(tmp_path, {"format": "other"})
    with pytest.raises(ValueError):
        write_scores(tmp_path, _doc(a=MetricResult.official(float("nan"), 1.0)))


def test_reader_names_the_file_and_keeps_the_others(tmp_path: Path) -> None:
    write_scores(tmp_path / "good", _doc(a=MetricResult.official(1.0, 100.0)))
    bad = tmp_path / "bad" / "scores.json"
    bad.parent.mkdir()
    bad.write_text(json.dumps({**_doc("e2"), "format": "streameval.scores/0"}))
    loaded = load_results([tmp_path])
    assert [r.episode for r in loaded.episodes] == ["e1"]
    assert len(loaded.errors) == 1 and str(bad) in str(loaded.errors[0])
    with pytest.raises(BadInputError, match="format must be"):
        load_episode(bad)


@pytest.mark.parametrize("module", ["streameval.results.scores_file", "streameval.leaderboard"])
def test_results_modules_import_without_opencv_pyav_or_pipeline(module: str) -> None:
    code = (
        f"import sys, {module}\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "", f"importing {module} pulled in {out}"


def test_a_statistic_reads_back_as_official_without_a_normalized_value(tmp_path: Path) -> None:
    from streameval.results.scores_file import _metric_result

    stat = MetricResult.statistic(0.16, "Laplacian RMS / mean luma")
    back = _metric_result("imaging_sharpness", stat.to_json(), tmp_path / "scores.json")
    assert back == stat
    no_unit = {"raw": 0.16, "normalized": None, "status": "official", "details": {}}
    assert _metric_result("x", no_unit, tmp_path / "scores.json").status == "missing"


def test_the_schema_check_runs_once_per_content_and_always_for_a_bad_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``load_episode`` checks the published schema once per distinct file text in a process
    (``table`` and the running intervals read the same files again and again): the same text
    again is not checked again, a changed file is, and a file the schema refuses is refused
    every time it is read."""
    from streameval.results import scores_file

    calls: list[Path] = []
    real = scores_file.validate

    def counting(doc: object, name: str, source: Path) -> None:
        calls.append(source)
        real(doc, name, source)

    monkeypatch.setattr(scores_file, "validate", counting)
    path = write_scores(tmp_path / "r", _doc("once", a=MetricResult.official(0.25, 25.0)))
    first = load_episode(path)
    assert load_episode(path) == first
    assert len(calls) == 1
    write_scores(tmp_path / "r", _doc("once", a=MetricResult.official(0.5, 50.0)))
    assert load_episode(path).metrics["a"].normalized == 50.0
    assert len(calls) == 2
    bad = tmp_path / "bad" / "scores.json"
    bad.parent.mkdir()
    doc = _doc("bad", a=MetricResult.official(0.5, 50.0))
    doc["metrics"]["a"]["normalized"] = 250.0  # type: ignore[index]  # outside [0, 100]
    bad.write_text(json.dumps(doc))
    for _ in range(2):
        with pytest.raises(BadInputError, match="250"):
            load_episode(bad)
    assert len(calls) == 4
