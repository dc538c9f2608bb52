"""Streaming final == rescore == replay of the recording, bit for bit
(docs/how-the-numbers-are-made.md)."""

from __future__ import annotations

import json
from pathlib import Path

from streameval.replay import ReplaySource, read_rollout

from streameval.engine.config import PipelineConfig
from streameval.engine.recording import RecordingObserver
from streameval.engine.rescore import rescore_dir
from tests.engine.helpers import run, world_source

# Every metric family stays on (identity is claimed for all of them); the world renders at
# 320×216 and the analysis frame is 256×172, a resize either way as with a real server, at
# a quarter of the default's cost.
CONFIG = PipelineConfig(cuts="scenedetect-adaptive", analysis_width=256, analysis_height=172)


def _metrics(path: Path) -> dict[str, object]:
    doc = json.loads((path / "scores.json").read_text())
    metrics: dict[str, object] = doc["metrics"]
    return metrics


def test_live_rescore_and_replay_are_bit_identical(tmp_path: Path) -> None:
    live_dir = tmp_path / "live"
    source = world_source("ADL", 6.0, width=320, height=216)
    outcome = run(source, live_dir, [RecordingObserver(live_dir / "recording")], CONFIG)
    assert outcome.complete
    live = _metrics(live_dir)
    assert live["direction_accuracy_trans"]["status"] == "official"  # type: ignore[index]
    # the in-memory outcome is what was written
    assert {k: m.to_json() for k, m in outcome.scores.metrics.items()} == live

    # rescore: same kernels on the cache, no video
    result = rescore_dir(live_dir)
    assert result.changed == []
    assert _metrics(live_dir) == live

    # replay of the recording through the very same pipeline
    rollout = read_rollout(live_dir / "recording")
    assert rollout.frame_count == outcome.frames
    replay_dir = tmp_path / "replay"
    replayed = run(ReplaySource(rollout), replay_dir, config=CONFIG)
    assert replayed.complete
    assert _metrics(replay_dir) == live
    # where the depth came from differs (model vs sidecar) and is recorded as such
    live_doc = json.loads((live_dir / "scores.json").read_text())
    replay_doc = json.loads((replay_dir / "scores.json").read_text())
    assert live_doc["provenance"]["depth_source"] == "model"
    assert replay_doc["provenance"]["depth_source"] == "sidecar"
