"""Each CPU imaging statistic reacts to its own procedural-world defect and not to the others.

One short clip per defect (same keys, same scene); every frame measured in full. "Reacts"
and "stays" are relative to the clean clip: the margins are the measured effects with room
(printed with ``-s``).
"""

from __future__ import annotations

import numpy as np
import pytest
from streameval.worlds.procedural_world import ProceduralWorld, world_config_for_defect

from streameval.metrics.quality.imaging import frame_statistics, imaging_metrics
from streameval.perception.analysis import to_analysis_gray

# one worker runs the module: its module-scoped episodes are made once, not once per worker
pytestmark = pytest.mark.xdist_group("imaging-defects")

KEYS = "W" * 16 + "A" * 16 + "R" * 16
DEFECTS = {
    "clean": {},
    "blur": {},
    "noise": {},
    "exposure_ramp": {"exposure_ramp_s": 2.0},  # −1.5 stops over 32 frames, then held
    "flicker": {},
}


@pytest.fixture(scope="module")
def measured() -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for name, overrides in DEFECTS.items():
        world = ProceduralWorld(world_config_for_defect(name, **overrides))
        rows = []
        for key in KEYS:
            image = world.step(key).image
            rows.append(frame_statistics(to_analysis_gray(image), image))
        metrics = imaging_metrics(np.array(rows), world.fps)
        values = {k: float(m.raw) for k, m in metrics.items() if m.raw is not None}
        values["stops"] = float(metrics["imaging_exposure"].details["stops_first_to_last"])
        out[name] = values
        print(name, {k: round(v, 4) for k, v in values.items()})
    return out


def rel(measured: dict[str, dict[str, float]], defect: str, stat: str) -> float:
    """The defect's value over the clean clip's."""
    return measured[defect][stat] / measured["clean"][stat]


def test_blur_lowers_sharpness_only(measured: dict[str, dict[str, float]]) -> None:
    assert rel(measured, "blur", "imaging_sharpness") < 0.3
    for defect in ("noise", "exposure_ramp", "flicker"):
        assert rel(measured, defect, "imaging_sharpness") == pytest.approx(1.0, abs=0.05)


def test_noise_raises_noise_only(measured: dict[str, dict[str, float]]) -> None:
    # 12 grey levels per channel is 8.0 in luma (0.299, 0.587, 0.114 weights)
    assert measured["noise"]["imaging_noise"] == pytest.approx(12.0 * 0.668, rel=0.1)
    assert measured["clean"]["imaging_noise"] < 1.0
    for defect in ("blur", "exposure_ramp", "flicker"):
        assert measured[defect]["imaging_noise"] < 1.0


def test_exposure_ramp_moves_exposure_only(measured: dict[str, dict[str, float]]) -> None:
    assert measured["exposure_ramp"]["stops"] < -1.0
    assert rel(measured, "exposure_ramp", "imaging_exposure") < 0.75
    for defect in ("blur", "noise"):
        assert abs(measured[defect]["stops"] - measured["clean"]["stops"]) < 0.02
        assert rel(measured, defect, "imaging_exposure") == pytest.approx(1.0, abs=0.01)
    # a slow ramp is no flicker
    assert measured["exposure_ramp"]["temporal_flicker"] < 0.2


def test_flicker_is_caught_and_only_flicker(measured: dict[str, dict[str, float]]) -> None:
    assert measured["flicker"]["temporal_flicker"] > 3.0
    for defect in ("clean", "blur", "noise", "exposure_ramp"):
        assert measured[defect]["temporal_flicker"] < 0.2
    # the flicker's gain averages to 1: the exposure level barely moves
    assert rel(measured, "flicker", "imaging_exposure") == pytest.approx(1.0, abs=0.05)


def test_colourfulness_ignores_blur_noise_and_flicker(
    measured: dict[str, dict[str, float]],
) -> None:
    for defect in ("blur", "noise", "flicker"):
        assert rel(measured, defect, "imaging_colourfulness") == pytest.approx(1.0, abs=0.03)
    # absolute units (Hasler & Süsstrunk): a darker image is less colourful
    assert rel(measured, "exposure_ramp", "imaging_colourfulness") < 0.8
