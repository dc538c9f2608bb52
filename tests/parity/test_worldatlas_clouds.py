"""Scene-F1 kernels against the WorldAtlas reference: back-projection with positive focal
lengths, trimmed ICP accept/reject, retention/hallucination/F1, frame sampling, and F1 on a
given split of rendered depth, all to 1e-9 (points bit-identical in float32).

Departures where WorldAtlas's definition wins (docs/methods.md#memory_scene_f1), each with its own
test below: negative focal lengths stay signed (``test_negative_focal_is_kept_signed``), zero or
non-finite ones cannot be projected (``test_zero_nan_inf_focal_cannot_project``); the split
itself (episode vs global turnaround) is exercised in tests/metrics/worldatlas.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from streameval.errors import CloudError, IntrinsicsError
from streameval.metrics.worldatlas.point_cloud import (
    backproject_frame,
    overlap_f1,
    score_clouds,
    segment_frame_indices,
    trimmed_icp,
)
from streameval.metrics.worldatlas.scene_f1 import DepthSidecar, scene_f1_on_split
from tests.parity.worldatlas_golden import ABSENT, absent_skips, arrays, asset, case_names, cases

TOL = 1e-9
# Clean dolly clouds: in the first ICP step 5,729 return points tie exactly at the 80 % cut
# (distance 0.0055552), so the kept subset (np.argpartition, SIMD-dependent) and then the
# ICP path differ between machines (2 vs 4 iterations, translation 0.0055 vs 0.0046). The
# decision and every overlap statistic still agree exactly; the threshold to 2e-5 relative.
ICP_TIES_AT_CUT = {"scene__dolly_clean", "scene__dolly_intrinsics_per_frame"}
SIGNED_OR_INVALID = {"negative_fy", "negative_fx", "zero_fx", "nan_fy", "inf_fx"}


def _kernel_names(prefix: str) -> list[Any]:
    return absent_skips([n for n in case_names("kernels") if n.startswith(prefix)] or [ABSENT])


def _assert_details(ours: dict[str, Any], ref: dict[str, Any], tol: float = TOL) -> None:
    for key, value in ref.items():
        if key == "alignment_rotation_degrees":
            # arccos at 1 turns a one-ulp difference of the trace (LAPACK builds differ) into
            # 1.7e-6 deg; the quantity computed before it, cos(angle), is what must agree.
            cos_ours, cos_ref = np.cos(np.radians([ours[key], value]))
            assert cos_ours == pytest.approx(cos_ref, abs=tol), key
        elif isinstance(value, float):
            assert ours[key] == pytest.approx(value, abs=tol), key
        else:
            assert ours[key] == value, key


@pytest.mark.parametrize("name", _kernel_names("backproject__"))
def test_backprojection(name: str) -> None:
    case = cases("kernels")[name]
    data = arrays("kernels", name)
    spec = case["spec"]
    if name.split("__")[1] in SIGNED_OR_INVALID:
        pytest.skip("WorldAtlas departs: see test_negative_focal_is_kept_signed / zero_nan_inf")

    def run() -> np.ndarray:
        return backproject_frame(
            data["in.depth"],
            data["in.valid"],
            data["in.pose_c2w"],
            data["in.intrinsics"],
            frame_index=spec["frame_index"],
            max_points=spec["max_points"],
        )

    if "error" in case["outputs"]:
        with pytest.raises(IntrinsicsError, match="unsupported intrinsics shape"):
            run()
        return
    points = run()
    assert points.dtype == np.float32
    np.testing.assert_array_equal(points, data["out.points"])


def test_negative_focal_is_kept_signed() -> None:
    """WorldAtlas's documented rule keeps signed focal lengths; the reference code floors them
    to 1e-8 (huge coordinates)."""
    for name in ("backproject__negative_fy", "backproject__negative_fx"):
        data = arrays("kernels", name)
        k = data["in.intrinsics"].astype(np.float64)
        points = backproject_frame(
            data["in.depth"],
            data["in.valid"],
            data["in.pose_c2w"],
            k,
            frame_index=0,
            max_points=4096,
        )
        rows, cols = np.nonzero(
            data["in.valid"] & np.isfinite(data["in.depth"]) & (data["in.depth"] > 0)
        )
        z = data["in.depth"][rows, cols].astype(np.float64)
        cam = np.stack([(cols - k[0, 2]) * z / k[0, 0], (rows - k[1, 2]) * z / k[1, 1], z], axis=1)
        pose = data["in.pose_c2w"].astype(np.float64)
        naive = cam @ pose[:3, :3].T + pose[:3, 3]
        np.testing.assert_allclose(points, naive, rtol=1e-5, atol=1e-5)
        assert np.abs(points).max() < 1e3  # the reference's floored focal gives ~1e8
        assert np.abs(data["out.points"]).max() > 1e6


def test_zero_nan_inf_focal_cannot_project() -> None:
    for name in ("backproject__zero_fx", "backproject__nan_fy", "backproject__inf_fx"):
        data = arrays("kernels", name)
        with pytest.raises(IntrinsicsError):
            backproject_frame(
                data["in.depth"],
                data["in.valid"],
                data["in.pose_c2w"],
                data["in.intrinsics"],
                frame_index=0,
                max_points=4096,
            )


@pytest.mark.parametrize("name", _kernel_names("icp__"))
def test_trimmed_icp(name: str) -> None:
    case = cases("kernels")[name]
    data = arrays("kernels", name)
    kwargs = case["spec"]["kwargs"]
    if "error" in case["outputs"]:
        with pytest.raises(CloudError, match="at least three points"):
            trimmed_icp(data["in.source"], data["in.target"], **kwargs)
        return
    result = trimmed_icp(data["in.source"], data["in.target"], **kwargs)
    # In the 12-degree blob, ICP converges to float32 round-off: at iterations 16-17, 34
    # matches tie at 2.98e-8 across the 80 % cut, and which tied rows np.argpartition keeps
    # depends on the CPU's SIMD sort (noted with the reference's golden data). The reference's own
    # arithmetic run here gives our 12.00000007110707 deg; the golden machine 12.000000064.
    tol = 1e-7 if name in ("icp__blob_rotation_12_rejected", "icp__source_with_nan_rows") else TOL
    _assert_details(result.details(), case["outputs"]["details"], tol)
    if tol == TOL:
        # float32 output of a float64 solve: a last-bit LAPACK difference may flip one ulp.
        np.testing.assert_array_max_ulp(result.aligned, data["out.aligned"], maxulp=1)
    else:
        np.testing.assert_allclose(result.aligned, data["out.aligned"], rtol=0, atol=tol)


RUNTIME_ALIGNMENT = {
    "memory_loop_runtime": "trimmed_icp",
    "identity": "identity",
    "explicit_threshold_0p05": "trimmed_icp",
    "long_horizon_runtime_centroid": "centroid",
}


@pytest.mark.parametrize("name", _kernel_names("score__"))
def test_score_point_cloud_memory(name: str) -> None:
    runtime_name = name.split("__")[2]
    if runtime_name not in RUNTIME_ALIGNMENT:
        pytest.skip("voxel down-sampling is a reference option outside WorldAtlas's scene F1")
    case = cases("kernels")[name]
    data = arrays("kernels", name)
    ref = case["outputs"]["result"]
    score = score_clouds(
        data["in.observation"],
        data["in.revisit"],
        alignment=RUNTIME_ALIGNMENT[runtime_name],  # type: ignore[arg-type]
        distance_threshold=case["spec"]["runtime"].get("distance_threshold"),
    )
    _assert_details(score.overlap.to_json(), {k: ref[k] for k in score.overlap.to_json()})
    assert score.observation_points == ref["observation_point_count"]
    assert score.revisit_points == ref["revisit_point_count"]
    assert score.scene_diagonal == pytest.approx(ref["scene_diagonal"], abs=TOL)
    _assert_details(score.alignment, ref["details"])


@pytest.mark.parametrize("name", _kernel_names("f1__"))
def test_overlap_f1(name: str) -> None:
    case = cases("kernels")[name]
    data = arrays("kernels", name)
    result = overlap_f1(
        data["in.observation"],
        data["in.revisit"],
        distance_threshold=case["spec"]["distance_threshold"],
    )
    _assert_details(result.to_json(), case["outputs"]["result"])


def test_segment_frame_sampling() -> None:
    case = cases("kernels")["select_segment_indices"]
    for (start, end, count), expected in zip(
        case["spec"]["calls"], case["outputs"]["results"], strict=True
    ):
        assert segment_frame_indices(start, end, count) == expected


def _scene_inputs(name: str) -> tuple[dict[str, Any], np.ndarray, DepthSidecar] | None:
    case = cases("scenes")[name]
    if case["asset"] is None:
        return None
    data = arrays("scenes", name)
    depth = asset(case["asset"])
    valid = data.get("in.depth_valid_mask", depth["depth_valid_mask"])
    return (
        case,
        data["in.poses_c2w"],
        DepthSidecar(depth["depth_metric"], valid, data["in.intrinsics"]),
    )


def _alignment(case: dict[str, Any]) -> str:
    overrides = case["runtime_overrides"]
    if "alignment" in overrides and overrides["alignment"] is None:
        return "centroid" if overrides.get("centroid_align") else "identity"
    return "trimmed_icp"


@pytest.mark.parametrize("name", absent_skips(case_names("scenes")))
def test_scene_f1_on_the_midpoint_split(name: str) -> None:
    """The reference's kernels on [0, N//2) / [N//2, N) (our temporal-midpoint fallback split)."""
    inputs = _scene_inputs(name)
    if inputs is None:
        pytest.skip("case has no depth sidecar")
    case, poses, sidecar = inputs
    ref = case["kernel_on_midpoint_split"]
    k = np.asarray(sidecar.intrinsics, dtype=np.float64)
    if k.shape != (1, 3, 3) and k.shape != (len(poses), 3, 3):
        pytest.skip("the reference's scene path reads (K,3,3) intrinsics only")
    if not (np.isfinite(k).all() and (k[:, 0, 0] > 0).all() and (k[:, 1, 1] > 0).all()):
        pytest.skip(
            "non-positive or non-finite focal length: WorldAtlas departs (see kernel tests)"
        )
    overrides = case["runtime_overrides"]
    n = len(poses)
    kwargs = {
        "alignment": _alignment(case),
        "max_frames_per_segment": overrides.get("max_frames_per_segment", 8),
        "max_points_per_frame": overrides.get("max_points_per_frame", 4096),
    }
    if "error" in ref:
        with pytest.raises(CloudError):
            scene_f1_on_split(poses, sidecar, range(0, n // 2), range(n // 2, n), **kwargs)  # type: ignore[arg-type]
        return
    got = scene_f1_on_split(poses, sidecar, range(0, n // 2), range(n // 2, n), **kwargs)  # type: ignore[arg-type]
    assert got.outbound_frames == ref["observation_sampled_frames"]
    assert got.return_frames == ref["revisit_sampled_frames"]
    result = ref["result"]
    overlap = got.score.overlap.to_json()
    if name in ICP_TIES_AT_CUT:
        threshold = overlap.pop("distance_threshold")
        assert threshold == pytest.approx(result["distance_threshold"], rel=2e-5)
        assert got.score.alignment["alignment"] == result["details"]["alignment"]
        _assert_details(overlap, {k: result[k] for k in overlap})
        return
    _assert_details(overlap, {k: result[k] for k in overlap})
    assert got.score.scene_diagonal == pytest.approx(result["scene_diagonal"], abs=TOL)
    _assert_details(got.score.alignment, result["details"])
