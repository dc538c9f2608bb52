"""Quality through the pipeline: Q-Align at episode end from the 1-fps frames, the CPU
statistics and drift, and ``rescore`` (with and without the model) needing no video."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from streameval.cli.main import main
from streameval.engine.config import PipelineConfig
from streameval.engine.rescore import rescore_dir
from streameval.metrics.quality.kernels import normalize_rating, rating_score
from streameval.perception.qalign import QAlign
from streameval.results.cache.episode import load_episode_cache
from tests.engine.helpers import run, world_source

# one worker runs the module: its module-scoped episodes are made once, not once per worker
pytestmark = pytest.mark.xdist_group("quality-pipeline")

KEYS = "WA"
SECONDS_PER_KEY = 6.0  # 12 s: 12 frames at 1 fps, enough for 10 drift segments
SMALL = {"width": 320, "height": 216}


def config(quality: str | None) -> PipelineConfig:
    # Quality and the imaging statistics are checked: no cut detector, appearance embeddings
    # or texture Grams, and the flow at the frames' 320×216 (its signals are not checked).
    return PipelineConfig(
        cuts=None,
        embedding=None,
        gram=None,
        quality=quality,
        analysis_width=SMALL["width"],
        analysis_height=SMALL["height"],
    )


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread() -> Iterator[None]:
    """Q-Align on one torch thread: its second spins on two shared cores and adds CPU time,
    not speed."""
    try:
        import torch
    except ImportError:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def without_qalign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("no-qalign")
    run(world_source(KEYS, SECONDS_PER_KEY, **SMALL), out, config=config(None))
    return out


@pytest.fixture(scope="module")
def with_qalign(tmp_path_factory: pytest.TempPathFactory, tiny_qalign: Path) -> Path:
    out = tmp_path_factory.mktemp("qalign")
    run(world_source(KEYS, SECONDS_PER_KEY, **SMALL), out, config=config(f"qalign:{tiny_qalign}"))
    return out


def metrics(results: Path) -> dict[str, dict[str, object]]:
    doc = json.loads((results / "scores.json").read_text())
    out: dict[str, dict[str, object]] = doc["metrics"]
    return out


def test_without_qalign_quality_is_not_applicable_with_what_to_download(
    without_qalign: Path,
) -> None:
    m = metrics(without_qalign)
    for name in ("perceptual_quality", "aesthetic_quality", "rollout_aesthetic_drift"):
        assert m[name]["status"] == "not_applicable"
        assert "hf download q-future/one-align" in str(m[name]["reason"])
    # imaging drift falls back to the CPU sharpness statistic, and says so
    drift = m["rollout_imaging_drift"]
    assert drift["status"] == "official"
    assert drift["details"]["backend"] == "cpu-sharpness"  # type: ignore[index]
    assert 0.0 <= float(drift["raw"]) < 1.0  # type: ignore[arg-type]
    for name in ("imaging_sharpness", "imaging_noise", "imaging_exposure", "temporal_flicker"):
        assert m[name]["status"] == "official" and m[name]["normalized"] is None
    cache = load_episode_cache(without_qalign / "cache")
    assert cache.quality is not None and sorted(cache.quality.frames) == [16 * i for i in range(12)]
    assert cache.quality.statistics is not None and cache.quality.statistics.shape == (192, 5)


def test_qalign_scores_from_the_cached_frames(with_qalign: Path) -> None:
    m = metrics(with_qalign)
    cache = load_episode_cache(with_qalign / "cache")
    assert cache.quality is not None and cache.quality.ratings is not None
    for name, task in (("perceptual_quality", "quality"), ("aesthetic_quality", "aesthetics")):
        assert m[name]["status"] == "official"
        x = rating_score(cache.quality.ratings.logits[task])
        assert m[name]["raw"] == x and m[name]["normalized"] == normalize_rating(x)
        assert 0.0 <= float(m[name]["normalized"]) <= 100.0  # type: ignore[arg-type]
    for name in ("rollout_imaging_drift", "rollout_aesthetic_drift"):
        assert m[name]["status"] == "official"
        details = m[name]["details"]
        assert str(details["backend"]).startswith("qalign(")  # type: ignore[index]
        assert len(details["segment_scores"]) == 10  # type: ignore[index]
    doc = json.loads((with_qalign / "scores.json").read_text())
    assert doc["provenance"]["backends"]["quality"].startswith("qalign(")


def test_rescore_is_bit_identical_without_the_model(with_qalign: Path) -> None:
    before = metrics(with_qalign)
    assert rescore_dir(with_qalign).changed == []
    assert metrics(with_qalign) == before


def test_rescore_with_qalign_needs_no_video(
    without_qalign: Path, with_qalign: Path, tiny_qalign: Path, tmp_path: Path
) -> None:
    """A cache written without the model, rated later from its 1-fps PNG frames, gives the
    numbers the live run gave (lossless frames: the same pixels reach the model)."""
    import shutil

    copy = tmp_path / "episode"
    shutil.copytree(without_qalign, copy)
    outcome = rescore_dir(copy, quality=QAlign(str(tiny_qalign), device="cpu"))
    assert "perceptual_quality" in outcome.changed
    live, later = metrics(with_qalign), metrics(copy)
    for name in ("perceptual_quality", "aesthetic_quality", "rollout_aesthetic_drift"):
        assert later[name]["raw"] == live[name]["raw"]
    assert rescore_dir(copy).changed == []  # the answers are in the cache now


def test_missing_qalign_weights_are_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "one-align"
    argv = ["demo", "--no-tui", "--out", str(tmp_path / "o"), "--seconds-per-key", "1"]
    assert main([*argv, "--actions", "1", "--quality", f"qalign:{missing}"]) == 2
    errors = [x for x in capsys.readouterr().err.splitlines() if x.startswith("error: ")]
    assert len(errors) == 1 and str(missing) in errors[0] and "hf download" in errors[0]
    assert main(["rescore", str(tmp_path), "--quality", f"qalign:{missing}"]) == 2
    assert "hf download" in capsys.readouterr().err


def test_rescore_with_qalign_refuses_lost_frames(
    without_qalign: Path, tiny_qalign: Path, tmp_path: Path
) -> None:
    import shutil

    copy = tmp_path / "episode"
    shutil.copytree(without_qalign, copy)
    (copy / "cache" / "quality_frames" / "000032.png").unlink()
    rescore_dir(copy, quality=QAlign(str(tiny_qalign), device="cpu"))
    m = metrics(copy)
    assert m["perceptual_quality"]["status"] == "missing"
    assert "11 of 12 1-fps frames" in str(m["perceptual_quality"]["reason"])
