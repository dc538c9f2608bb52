"""A delivery without an action log (``<MODEL>/<image>_<action>.mp4``) is scored on the
reference's equal split of the signal time (docs/methods.md#control-segments): segment
windows, switch times, latency windows, the motion-type fit frames and Revisit's reversals, as the
published benchmark computes them on the same video. The kernels have golden parity (tests/parity);
this checks that replaying a delivery actually takes that path, end to end, and that rescore keeps
it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from streameval.protocol.schedule import Schedule
from streameval.worlds.procedural_world import ProceduralWorld, WorldConfig

from streameval.cli.main import main
from streameval.core.episode.cache import EpisodeCache
from streameval.engine.scoring import motion_fits
from streameval.metrics.control.kernels import (
    MotionType,
    control_metrics,
    control_metrics_for_spans,
)
from streameval.metrics.fits.motion_type import fit_frames_equal_split
from streameval.metrics.segments import equal_split_spans
from streameval.results.cache.episode import load_episode_cache
from tests.replay.replay_synth import write_video

# one worker runs the whole module: its fixture renders and replays once, not per worker
pytestmark = pytest.mark.xdist_group("delivery")

FPS = 16
KEYS = ["A", "D", "A"]  # worldmark action 14


@pytest.fixture(scope="module")
def delivery(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The clean procedural world driven A, D, A for 20 s each, saved as a delivery video
    (lossless x264 RGB). 959 frames, one short of 60 s: there the reference's fit picks on its
    split differ from those of the per-frame keys' runs (26 frames), as at 935, 944, 950..."""
    root = tmp_path_factory.mktemp("delivery")
    world = ProceduralWorld(WorldConfig(width=160, height=108, fps=FPS))
    schedule = Schedule.per_key(KEYS, 20.0, FPS)
    frames = [world.step(key).image for key in schedule.frame_keys()][:959]
    video = write_video(root / "MODELQ" / "001_014.mp4", frames, fps=FPS, codec="libx264rgb")
    out = root / "out"
    # No report pages, and DIS's ultrafast preset: the checks recompute the scores from the
    # cache's own signals, so they hold for any flow (a fifth of the run's CPU time less).
    args = ["replay", str(video), "--out", str(out), "--no-tui", "-q", "--no-report"]
    args += ["--flow", "dis-ultrafast"]
    assert main([*args, "--cuts", "scenedetect-content"]) == 0
    return out / "MODELQ" / "MODELQ_001_014"


def _types(cache: EpisodeCache) -> dict[int, MotionType]:
    return {j: MotionType(f.p_trans, f.p_yaw) for j, f in motion_fits(cache).items() if f}


def test_control_is_scored_on_the_equal_split(delivery: Path) -> None:
    cache = load_episode_cache(delivery / "cache")
    assert cache.meta["equal_split_keys"] == KEYS
    n = cache.sx.size
    spans = equal_split_spans(KEYS, n, FPS)
    expected = control_metrics_for_spans(cache.sx, cache.srad, spans, FPS, _types(cache))
    scores = json.loads((delivery / "scores.json").read_text())["metrics"]
    for name, result in expected.items():
        assert scores[name]["status"] == result.status, name
        assert scores[name]["raw"] == result.raw, name
    # the switch into D is at a third of the last signal sample's time, not at frame 320
    (switch,) = [
        e for e in scores["response_latency_trans"]["details"]["segments"] if e["index"] == 1
    ]
    dur = (n - 1) / FPS
    assert switch["t0_s"] == dur / 3 and switch["t0_s"] != 320 / FPS
    # the per-frame-key path would have given other windows (what this test guards against)
    by_frames = control_metrics(cache.sx, cache.srad, cache.frame_keys, FPS, _types(cache))
    (other,) = [
        e for e in by_frames["response_latency_trans"].details["segments"] if e["index"] == 1
    ]
    assert other["t0_s"] == 320 / FPS


def test_fit_frames_are_the_reference_picks(delivery: Path) -> None:
    cache = load_episode_cache(delivery / "cache")
    n_frames = len(cache.frame_keys)
    wanted = {f for j in range(3) for f in fit_frames_equal_split(j, 3, n_frames, FPS)}
    assert {s.frame for s in cache.fit_samples} == wanted
    assert set(motion_fits(cache)) == {0, 1, 2}


def test_rescore_reproduces_the_split(delivery: Path, tmp_path: Path) -> None:
    before = json.loads((delivery / "scores.json").read_text())["metrics"]
    assert main(["rescore", str(delivery)]) == 0
    after = json.loads((delivery / "scores.json").read_text())["metrics"]
    assert after == before
    # a cache without the marker (an action-logged episode) keeps the per-frame path
    meta = json.loads((delivery / "cache" / "episode.json").read_text())
    assert np.array(meta["equal_split_keys"]).tolist() == KEYS
