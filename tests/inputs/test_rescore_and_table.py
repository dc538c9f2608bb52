"""Bad input to ``rescore`` and ``table`` (docs/cli.md#bad-input): damaged caches are one line each
(the other episodes are still rescored), a folder without a cache is reported, corrupt cut indices
and ``"complete": "yes"`` are refused, and out-of-range scores are never ranked."""

from __future__ import annotations

import json
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from streameval.cli.main import main
from streameval.core.metric_result import MetricResult
from streameval.errors import BadInputError
from streameval.leaderboard import Aggregate, model_cell
from streameval.results.scores_file import EpisodeRecord, load_episode
from tests.replay.replay_synth import make_rollout_dir


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One replayed episode: its results dir has scores.json and a full cache."""
    root = tmp_path_factory.mktemp("scored")
    rollout = make_rollout_dir(root / "in" / "ep", ["A"] * 20 + ["D"] * 20, size=(64, 48))
    poses = np.tile(np.eye(4), (40, 1, 1))
    poses[:, 0, 3] = np.linspace(0, 1, 40)
    np.save(rollout / "poses.npy", poses)  # geometry, so memory.npz holds views
    np.save(rollout / "intrinsics.npy", np.array([[50.0, 0, 32], [0, 50, 24], [0, 0, 1]]))
    np.save(rollout / "depth_metric.npy", np.full((40, 12, 16), 3.0, np.float32))
    code = main(["replay", str(rollout), "--out", str(root / "out"), "--no-tui", "--no-report",
                 "--cuts", "scenedetect-content"])  # fmt: skip
    assert code == 0
    (results,) = (root / "out").glob("*/ep")  # OUT/<model>/<episode>/
    return results


def _rescore(paths: list[Path], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = main(["rescore", *map(str, paths)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, [line for line in err.splitlines() if line.startswith("error: ")]


def _rewrite_npz(path: Path, change: Callable[[dict[str, np.ndarray]], None]) -> None:
    with np.load(path) as z:
        data = {k: z[k] for k in z.files}
    change(data)
    np.savez(path, **data)


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _edit_episode_json(field: str, value: object) -> Callable[[Path], None]:
    def edit(cache: Path) -> None:
        doc = json.loads((cache / "episode.json").read_text())
        doc[field] = value
        (cache / "episode.json").write_text(json.dumps(doc))

    return edit


def _fit_sizes(sizes: Callable[[int], list[int]], dtype: type = np.int64) -> Callable[[Path], None]:
    """Replace the fit sizes by ``sizes(n)``, n = the points stored in fit_x (one frame each)."""

    def change(d: dict[str, np.ndarray]) -> None:
        values = sizes(len(d["fit_x"]))
        d["fit_sizes"] = np.array(values, dtype=dtype)
        d["fit_frames"] = np.zeros(len(values), np.int64)
        d["fit_has_depth"] = np.zeros(len(values), bool)
        d["fit_derotated"] = np.zeros(len(values), bool)

    return lambda cache: _rewrite_npz(cache / "signals.npz", change)


CASES: dict[str, tuple[Callable[[Path], None], str, str]] = {
    "truncated npz": (lambda c: _truncate(c / "signals.npz"), "signals.npz", "unreadable archive"),
    "garbage npz": (lambda c: (c / "signals.npz").write_bytes(b"PK\x03\x04garbage"),
                    "signals.npz", "unreadable archive"),
    "missing sx": (lambda c: _rewrite_npz(c / "signals.npz", lambda d: d.pop("sx")),
                   "signals.npz", "no array 'sx'"),
    "pickled array": (lambda c: _rewrite_npz(
        c / "signals.npz", lambda d: d.update(sx=np.array([{}], dtype=object))),
        "signals.npz", "pickled data is never loaded"),
    "corrupt cuts": (lambda c: _rewrite_npz(
        c / "memory.npz", lambda d: d.update(cuts=np.array([5, 3, 10**6]), has_cuts=np.True_)),
        "memory.npz", "cut indices must rise strictly"),
    "non-rotation view": (lambda c: _rewrite_npz(
        c / "memory.npz", lambda d: d.update(view_poses=d["view_poses"] * 1000)),
        "memory.npz", "view 0: "),
    "episode.json not UTF-8": (lambda c: (c / "episode.json").write_bytes(b"\xff\xfe{}"),
                               "episode.json", "not UTF-8"),
    "episode.json null": (lambda c: (c / "episode.json").write_text("null"),
                          "episode.json", "expected a JSON object"),
    "episode.json no fps": (_edit_episode_json("fps", None), "episode.json", "fps None"),
    "complete yes": (_edit_episode_json("complete", "yes"), "episode.json", "'complete' must"),
    "deep episode.json": (lambda c: (c / "episode.json").write_text("[" * 100_000),
                          "episode.json", "nested"),
    "huge int": (lambda c: (c / "episode.json").write_text('{"fps": ' + "7" * 5000 + "}"),
                 "episode.json", "integer with 5000 digits"),
    # an independent fuzzer: fit sizes no cache can hold, named as the field they are
    "fit_sizes 1e9": (_fit_sizes(lambda n: [10**9]), "signals.npz", "fit_sizes[0] is 1000000000"),
    "fit_sizes negative": (_fit_sizes(lambda n: [-3, n + 3]), "signals.npz",
                           "fit_sizes[0] is -3 (expected 0 to "),
    "fit_sizes wrap around": (_fit_sizes(lambda n: [2**64 - 1, n + 1], np.uint64), "signals.npz",
                              f"fit_sizes[0] is {2**64 - 1}"),
    "fit_derotated short": (lambda c: _rewrite_npz(
        c / "signals.npz", lambda d: d.update(fit_derotated=d["fit_derotated"][:-1])),
        "signals.npz", "fit_derotated differ in length"),
    "fit_derotated not bool": (lambda c: _rewrite_npz(
        c / "signals.npz", lambda d: d.update(fit_derotated=d["fit_derotated"] * 0.5)),
        "signals.npz", "fit_derotated"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_damaged_cache_is_one_line_and_the_rest_rescored(
    scored: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    damage, file, says = CASES[case]
    good = shutil.copytree(scored, tmp_path / "good")
    bad = shutil.copytree(scored, tmp_path / "bad")
    before = (bad / "scores.json").read_bytes()
    damage(bad / "cache")
    code, errors = _rescore([good, bad], capsys)
    assert code == 2 and len(errors) == 1, errors
    assert errors[0].startswith(f"error: {bad / 'cache' / file}: ") and says in errors[0], errors
    assert (bad / "scores.json").read_bytes() == before  # never rewritten from a bad cache
    assert "rescored" in capsys.readouterr().out or True


def test_folder_without_cache_is_reported(
    scored: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "runs"
    shutil.copytree(scored, root / "a")
    shutil.copytree(scored, root / "b")
    shutil.rmtree(root / "b" / "cache")
    code, errors = _rescore([root], capsys)
    assert code == 2 and errors == [f"error: {root / 'b' / 'cache'}: missing: nothing to rescore "
                                    "(was this episode finished?)"]  # fmt: skip


def _table(paths: list[Path], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, list[str]]:
    code = main(["table", *map(str, paths), "--markdown", "--include-all"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    errors = [line for line in captured.err.splitlines() if line.startswith("error: ")]
    return code, captured.out, errors


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"normalized": 500.0}, "normalized: 500.0 is greater than the maximum of 100"),
        ({"normalized": -300.0}, "normalized: -300.0 is less than the minimum of 0"),
        ({"raw": 1e308}, "raw: 1e+308"),
        ({"details": {"segments": [{"status": "scored", "value": 1e308}]}}, "1e+308"),
    ],
)
def test_table_refuses_out_of_range_scores(
    scored: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    change: dict[str, object],
    says: str,
) -> None:
    bad = shutil.copytree(scored, tmp_path / "bad")
    doc = json.loads((bad / "scores.json").read_text())
    doc["model"] = "cheater"
    doc["metrics"]["direction_accuracy_trans"].update(change)
    (bad / "scores.json").write_text(json.dumps(doc))
    good = shutil.copytree(scored, tmp_path / "good")
    code, out, errors = _table([good, bad], capsys)
    assert code == 2 and len(errors) == 1 and says in errors[0], errors
    assert "cheater" not in out and "synth" in out


def test_zip_bomb_sized_member_is_bounded(
    scored: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = shutil.copytree(scored, tmp_path / "bad")
    with zipfile.ZipFile(bad / "cache" / "signals.npz", "a") as z:
        z.writestr("extra.npy", b"\x93NUMPY garbage")
    code, errors = _rescore([bad], capsys)
    assert code == 2 and len(errors) == 1 and "signals.npz" in errors[0]


def test_segment_details_outside_their_range_are_refused(scored: Path) -> None:
    # found by the fuzz suite: a latency segment value of -1 made the column -100, ranked; then
    # it silently fell back to the episode mean; now the file is refused, naming the segment
    doc = json.loads((scored / "scores.json").read_text())
    entry = doc["metrics"]["response_latency_trans"]
    # the 40-frame episode's switch is too short to score (not_applicable): give it a value
    index = 0
    entry["details"]["segments"][index].update(status="scored", value=-1)
    field = f"metrics.response_latency_trans.details.segments.{index}.value"
    with pytest.raises(BadInputError, match=rf"{field}: -1 is less than the minimum of 0$"):
        load_episode_doc(scored, doc)


def test_a_column_outside_0_100_is_missing_never_ranked(scored: Path) -> None:
    record = load_episode_doc(scored, json.loads((scored / "scores.json").read_text()))

    def broken(measured: Sequence[MetricResult], n_missing: int) -> Aggregate:
        return Aggregate(-100.0, -100.0, -100.0, "broken", 1)

    cell = model_cell([record], "direction_accuracy_trans", aggregator=broken)
    assert cell.value is None and cell.status == "missing"
    assert "outside [0, 100]" in cell.reasons[-1]


def load_episode_doc(scored: Path, doc: dict[str, Any]) -> EpisodeRecord:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scores.json"
        path.write_text(json.dumps(doc))
        return load_episode(path)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested 100000 levels deep"),
        ('{"format": "streameval.scores/1", "frames": ' + "9" * 5000 + "}", "5000 digits"),
    ],
)
def test_scores_json_parser_limits(
    scored: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, says: str
) -> None:
    bad = tmp_path / "bad" / "scores.json"
    bad.parent.mkdir()
    bad.write_text(text)
    good = shutil.copytree(scored, tmp_path / "good")
    code, out, errors = _table([good, bad.parent], capsys)
    assert code == 2 and len(errors) == 1 and says in errors[0] and str(bad) in errors[0]
    assert "synth" in out
