"""The closed-loop memory metrics through the pipeline on a short memory_loop: a world that
forgets scores lower than a clean one, the clean world's half-life shows no measurable decay,
and rescore reproduces every number from the cache alone
(docs/methods.md#memory_revisit_fidelity)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from streameval.protocol.memory_loop import memory_loop
from streameval.worlds.procedural_world import ProceduralWorld, world_config_for_defect

from streameval.engine.config import PipelineConfig
from streameval.engine.rescore import rescore_dir
from streameval.transports.inprocess.driver import InProcessSource
from tests.engine.helpers import run

# 3 s at 256×160: the loop turns at 120 °/s and back; clean − amnesia was 0.35 (fidelity) and
# 0.39 (rendering) on it, as on 6 s at 320×216 (0.35, 0.37). The long square_loop test keeps 6 s
# and 320×216.
SECONDS = 3.0
W, H = 256, 160
# Stated margins (clean − amnesia) on this short loop; bench/worldatlas_memory.py prints the
# full table for all six trajectories.
FIDELITY_MARGIN = 0.1
RENDERING_MARGIN = 0.03
# The closed-loop metrics read their own cached frames, not the flow: the control perception
# runs at the frames' size and the CPU imaging statistics are off (same memory_* numbers either
# way).
CONFIG = PipelineConfig(
    cuts="scenedetect-adaptive",
    imaging=False,
    quality_frames=False,
    analysis_width=W,
    analysis_height=H,
)


def _source(
    defect: str,
    trajectory: str = "yaw_loop_180",
    seconds: float = SECONDS,
    size: tuple[int, int] = (W, H),
) -> InProcessSource:
    loop = memory_loop(trajectory, fps=24.0, seconds=seconds)
    config = replace(
        world_config_for_defect(defect),
        width=size[0],
        height=size[1],
        fps=24.0,
        yaw_rate_deg=loop.yaw_rate_deg,
        forward_speed=loop.speed(2.0),
    )
    if config.forget_scene_at_s is not None:  # the amnesia preset: forget at the turnaround
        config = replace(config, forget_scene_at_s=seconds / 2)
    return InProcessSource(
        ProceduralWorld(config),
        loop.schedule(),
        episode=trajectory,
        model_name=f"procedural-world-{defect}",
        suite="memory_loop",
        width=size[0],
        height=size[1],
        trajectory=trajectory,
    )


def test_amnesia_scores_lower_and_rescore_is_bit_identical(tmp_path: Path) -> None:
    clean = run(_source("clean"), tmp_path / "clean", config=CONFIG).scores.metrics
    amnesia = run(_source("amnesia"), tmp_path / "amnesia", config=CONFIG).scores.metrics
    for name in (
        "memory_revisit_fidelity",
        "memory_geometric_closure",
        "memory_rendering_recovery",
    ):
        assert clean[name].status == "official", (name, clean[name].reason)
        assert clean[name].details["pair_source"] == "strict"
        assert clean[name].details["pair_count"] > 0
    fid_c, fid_a = clean["memory_revisit_fidelity"], amnesia["memory_revisit_fidelity"]
    assert fid_c.details["feature_backend"] == "cpu-colorhist-rbf"
    assert (fid_c.normalized or 0) - (fid_a.normalized or 0) >= FIDELITY_MARGIN
    ren_c, ren_a = clean["memory_rendering_recovery"], amnesia["memory_rendering_recovery"]
    assert ren_c.details["gram_backend"] == "cpu-filterbank-gram"
    assert (ren_c.normalized or 0) - (ren_a.normalized or 0) >= RENDERING_MARGIN
    half = clean["memory_half_life"]
    assert half.status == "not_applicable" and half.details["reason_code"] == "no_measurable_decay"
    assert (tmp_path / "clean" / "cache" / "closed_loop" / "frames").is_dir()
    assert rescore_dir(tmp_path / "clean").changed == []
    assert rescore_dir(tmp_path / "amnesia").changed == []


@pytest.mark.long
def test_square_loop_amnesia_lowers_rendering_recovery(tmp_path: Path) -> None:
    """square_loop's revisits are loose matches and the amnesia world redraws the scene in the
    same style: only the layout-aware (2×2 grid) Gram term tells them apart."""

    def source(defect: str) -> InProcessSource:
        return _source(defect, "square_loop", 6.0, (320, 216))

    clean = run(source("clean"), tmp_path / "clean").scores.metrics
    amnesia = run(source("amnesia"), tmp_path / "amnesia").scores.metrics
    ren_c, ren_a = clean["memory_rendering_recovery"], amnesia["memory_rendering_recovery"]
    assert ren_c.status == "official", ren_c.reason
    assert ren_c.details["gram_backend"] == "cpu-filterbank-gram"
    assert (ren_c.normalized or 0) - (ren_a.normalized or 0) >= RENDERING_MARGIN
