"""Global Memory (SPEC §5, statuses §8): view selection and the co-visibility error.

Fixtures are rendered by code: posed z-depth maps of a known box room (the camera inside an
axis-aligned box), seen from a moving, turning camera. The naive reference below projects point
by point with plain loops; it shares no helper with the implementation.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from streameval.fits.geometry import select_views
from streameval.metrics.memory_global import (
    GlobalView,
    covisibility_errors,
    global_memory,
)
from tests.metrics.helpers import model_value

# ------------------------------------------------------------------------------------------
# Synthetic scene
# ------------------------------------------------------------------------------------------

HALF = (4.0, 2.0, 5.0)  # box room half extents (x, y, z)


def yaw_pose(yaw: float, pos: tuple[float, float, float]) -> np.ndarray:
    c, s = math.cos(yaw), math.sin(yaw)
    pose = np.eye(4)
    pose[:3, :3] = [[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]]
    pose[:3, 3] = pos
    return pose


def intrinsics(h: int, w: int) -> np.ndarray:
    f = 0.8 * w
    return np.array([[f, 0.0, (w - 1) / 2], [0.0, f, (h - 1) / 2], [0.0, 0.0, 1.0]])


def render_box(pose: np.ndarray, k: np.ndarray, h: int, w: int) -> np.ndarray:
    """z-depth of the box walls seen from ``pose`` (camera-to-world, OpenCV axes)."""
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    rays = np.stack([xs, ys, np.ones_like(xs)], axis=-1) @ np.linalg.inv(k).T  # z = 1
    dirs = rays @ pose[:3, :3].T
    centre = pose[:3, 3]
    t = np.full((h, w), np.inf)
    for ax in range(3):
        d = dirs[..., ax]
        with np.errstate(divide="ignore", invalid="ignore"):
            hit_pos = np.where(d > 0, (HALF[ax] - centre[ax]) / d, np.inf)
            hit_neg = np.where(d < 0, (-HALF[ax] - centre[ax]) / d, np.inf)
        t = np.minimum(t, np.minimum(hit_pos, hit_neg))
    return t.astype(np.float32)  # ray z-component is 1, so t is the z-depth


def scene_views(n: int, h: int = 48, w: int = 64, turn: float = math.pi) -> list[GlobalView]:
    k = intrinsics(h, w)
    views = []
    for m in range(n):
        a = m / max(n - 1, 1)
        pose = yaw_pose(turn * a, (1.5 * math.sin(3 * a), 0.2 * a, math.cos(2 * a) - 1.0))
        views.append(GlobalView(16 * m, pose, render_box(pose, k, h, w), k))
    return views


# ------------------------------------------------------------------------------------------
# Naive reference
# ------------------------------------------------------------------------------------------


def n_errors(
    views: list[GlobalView], max_points: int
) -> tuple[list[float], dict[tuple[int, int], int]]:
    prepared = []
    for v in views:
        depth = np.asarray(v.depth, dtype=np.float64)
        h, w = depth.shape
        conf = np.ones((h, w), dtype=bool) if v.confidence is None else np.asarray(v.confidence)
        flat = [
            y * w + x
            for y in range(h)
            for x in range(w)
            if conf[y, x] and math.isfinite(depth[y, x]) and depth[y, x] > 0
        ]
        med = float(np.median([depth.flat[f] for f in flat]))
        if len(flat) > max_points:
            flat = [flat[(k * len(flat)) // max_points] for k in range(max_points)]
        pose = np.asarray(v.pose, dtype=np.float64)
        kinv = np.linalg.inv(np.asarray(v.intrinsics, dtype=np.float64))
        pts = []
        for f in flat:
            y, x = divmod(f, w)
            cam = kinv @ np.array([x, y, 1.0]) * depth[y, x]
            pts.append(pose[:3, :3] @ cam + pose[:3, 3])
        prepared.append((depth, conf, pose, kinv, np.asarray(v.intrinsics, float), pts, med))
    errors: list[float] = []
    counts: dict[tuple[int, int], int] = {}
    for a, (_, _, _, _, _, pts_a, med_a) in enumerate(prepared):
        for b, (depth_b, conf_b, pose_b, kinv_b, k_b, _, _) in enumerate(prepared):
            if a == b:
                continue
            h, w = depth_b.shape
            w2c = np.linalg.inv(pose_b)
            pair = []
            for p in pts_a:
                cam = w2c[:3, :3] @ p + w2c[:3, 3]
                if cam[2] <= 0:
                    continue
                uvw = k_b @ cam
                u, v = uvw[0] / uvw[2], uvw[1] / uvw[2]
                if not (0 <= u <= w - 1 and 0 <= v <= h - 1):
                    continue
                # the 2×2 pixels around (u, v); on the last column/row, the cell before it
                x0 = min(math.floor(u), max(w - 2, 0))
                y0 = min(math.floor(v), max(h - 2, 0))
                x1, y1 = min(x0 + 1, w - 1), min(y0 + 1, h - 1)
                corners = [(x0, y0), (x1, y0), (x0, y1), (x1, y1)]
                if not all(
                    conf_b[y, x] and math.isfinite(depth_b[y, x]) and depth_b[y, x] > 0
                    for x, y in corners
                ):
                    continue
                # bilinear in inverse depth (exact on planes)
                ax, ay = u - x0, v - y0
                weights = [(1 - ax) * (1 - ay), ax * (1 - ay), (1 - ax) * ay, ax * ay]
                inv_db = sum(
                    wt / depth_b[y, x] for wt, (x, y) in zip(weights, corners, strict=True)
                )
                db = 1.0 / inv_db
                if not 0.7 < cam[2] / db < 1.4:
                    continue
                xb = pose_b[:3, :3] @ (kinv_b @ np.array([u, v, 1.0]) * db) + pose_b[:3, 3]
                pair.append(float(np.linalg.norm(p - xb)) / med_a)
            counts[(a, b)] = len(pair)
            if len(pair) >= 5:
                errors.extend(pair)
    return errors, counts


# ------------------------------------------------------------------------------------------
# View selection
# ------------------------------------------------------------------------------------------


def n_select(n_frames: int, fps: float) -> list[int]:
    k = int((n_frames - 1) / fps + 1e-9) + 1
    k = min(n_frames, max(6, min(64, k)))
    if k == 1:
        return [0]
    return [math.floor(m * (n_frames - 1) / (k - 1) + 0.5) for m in range(k)]


@pytest.mark.parametrize(
    ("n_frames", "fps", "count"),
    [(320, 16.0, 20), (1440, 24.0, 60), (960, 16.0, 60), (4000, 16.0, 64), (48, 16.0, 6),
     (4, 16.0, 4), (1, 24.0, 1), (481, 24.0, 21), (300, 29.97, 10)],
)  # fmt: skip
def test_select_views(n_frames: int, fps: float, count: int) -> None:
    frames = select_views(n_frames, fps)
    assert frames == n_select(n_frames, fps)
    assert len(frames) == count
    assert frames[0] == 0 and frames[-1] == n_frames - 1
    assert frames == sorted(set(frames))
    if 6 < count < 64:  # about one second apart
        gaps = np.diff(frames) / fps
        # never denser than 1 fps; at most k/(k − 1) s (+ rounding) apart
        assert gaps.min() >= 1.0 - 1.0 / fps
        assert gaps.max() <= count / (count - 1) + 1.0 / fps


def test_select_views_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        select_views(0, 16.0)
    with pytest.raises(ValueError):
        select_views(100, 0.0)


# ------------------------------------------------------------------------------------------
# Co-visibility error
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("perturb", [False, True])
def test_covisibility_matches_reference(perturb: bool) -> None:
    views = scene_views(6, h=24, w=32)
    if perturb:
        views = [
            GlobalView(v.frame, v.pose, np.asarray(v.depth) * 1.2, v.intrinsics) if m >= 3 else v
            for m, v in enumerate(views)
        ]
    # a confidence mask on one view, with garbage depth where it is not confident
    depth = np.asarray(views[1].depth).copy()
    conf = np.ones(depth.shape, dtype=bool)
    conf[:, :8] = False
    depth[:, :4] = np.nan
    views[1] = GlobalView(views[1].frame, views[1].pose, depth, views[1].intrinsics, conf)
    ref_err, ref_counts = n_errors(views, max_points=150)
    cov = covisibility_errors(views, max_points=150)
    for (a, b), n in ref_counts.items():
        assert cov.counts[a, b] == n
    got = np.sort(cov.errors)
    assert got.size == len(ref_err) > 0
    np.testing.assert_allclose(got, np.sort(ref_err), rtol=1e-9, atol=1e-12)
    assert cov.e == pytest.approx(float(np.median(ref_err)), rel=1e-9)


def test_consistent_scene_scores_near_100() -> None:
    res = global_memory(scene_views(12, h=96, w=128))
    assert res.status == "official"
    assert res.details["e"] is not None
    # the walls are planes, where bilinear inverse depth is exact: only float32 rounding is left
    assert res.details["e"] < 1e-6
    assert res.normalized is not None and res.normalized > 90.0
    assert res.details["pairs_evaluated"] + res.details["pairs_skipped"] == 12 * 11
    json.dumps(res.to_json(), allow_nan=False)


def ground_views(n: int, h: int, w: int, step_m: float) -> list[GlobalView]:
    """A camera 1 m above an endless ground plane walking forward ``step_m`` per view, looking
    level: the ground reaches the horizon at grazing angles, where depth changes fastest."""
    k = np.array([[0.7 * w, 0.0, (w - 1) / 2], [0.0, 0.7 * w, (h - 1) / 2], [0.0, 0.0, 1.0]])
    dy = (np.arange(h, dtype=np.float64) - k[1, 2]) / k[1, 1]
    with np.errstate(divide="ignore"):
        rows = np.where(dy > 0, 1.0 / dy, np.inf)  # y down: the ground is at y = +1
    depth = np.broadcast_to(rows[:, None], (h, w)).astype(np.float32)
    return [
        GlobalView(16 * m, yaw_pose(0.0, (0.0, 0.0, step_m * m)), depth, k, np.isfinite(depth))
        for m in range(n)
    ]


def test_ground_plane_has_no_quantisation_floor() -> None:
    """Walking forward over a plane: every co-visible point lands between pixels of the other
    view. A nearest-pixel lookup errs by up to half a pixel of depth gradient, which near the
    horizon is metres (it scored 42 here, e ≈ 0.07); bilinear inverse depth is exact on a plane.
    """
    views = ground_views(8, h=108, w=160, step_m=2.4)
    res = global_memory(views)
    assert res.status == "official"
    assert res.details["e"] < 1e-6
    assert res.details["pairs_evaluated"] > 0
    cov = covisibility_errors(views)
    # no edge anywhere: every point is exact (a point whose 2×2 cell touches the sky above
    # the horizon is skipped, not interpolated towards infinity)
    assert float(cov.errors.max()) < 1e-5
    assert res.normalized is not None and res.normalized > 99.99


def test_last_row_and_column_use_the_cell_before() -> None:
    """Points landing exactly on b's last row/column are inside (interpolated from the 2×2 cell
    before it), one pixel further is outside. Binary-exact numbers (f = 8, a 4 m wall, a 0.5 m
    shift = exactly 1 pixel) so that no rounding decides which side of the edge a point is."""
    h, w = 9, 13
    k = np.array([[8.0, 0.0, 6.0], [0.0, 8.0, 4.0], [0.0, 0.0, 1.0]])
    depth = np.full((h, w), 4.0, dtype=np.float32)  # a fronto-parallel wall
    a = GlobalView(0, yaw_pose(0.0, (0.0, 0.0, 0.0)), depth, k)
    # b sits 0.5 m left of and above a: a's pixel (x, y) is b's pixel (x + 1, y + 1)
    b = GlobalView(16, yaw_pose(0.0, (-0.5, -0.5, 0.0)), depth, k)
    cov = covisibility_errors([a, b])
    ref_err, ref_counts = n_errors([a, b], max_points=10_000)
    assert cov.counts[0, 1] == ref_counts[(0, 1)] == (h - 1) * (w - 1)
    assert cov.counts[1, 0] == ref_counts[(1, 0)] == (h - 1) * (w - 1)
    assert cov.errors.size == len(ref_err) == 2 * (h - 1) * (w - 1)
    assert float(cov.errors.max()) == 0.0 and max(ref_err) == 0.0


def test_depth_perturbation_of_later_views_raises_e() -> None:
    # A gentle turn, so early and late views see the same walls and many pairs are mixed.
    views = scene_views(12, h=96, w=128, turn=0.6)
    good = global_memory(views)
    bad_views = [
        GlobalView(v.frame, v.pose, np.asarray(v.depth) * 1.2, v.intrinsics) if m >= 6 else v
        for m, v in enumerate(views)
    ]
    bad = global_memory(bad_views)
    assert bad.status == "official" and good.status == "official"
    assert bad.raw is not None and good.raw is not None
    assert bad.raw > 0.03 and bad.raw > 8 * good.raw
    assert good.normalized is not None and bad.normalized is not None
    assert bad.normalized < 65.0 < 90.0 < good.normalized
    # per source view: views next to the perturbed/unperturbed boundary carry large errors
    assert max(v["mean_error"] for v in bad.details["per_view"]) > 0.1


def test_pose_drift_raises_e() -> None:
    views = scene_views(12, h=96, w=128, turn=0.6)
    drifted = []
    for m, v in enumerate(views):
        pose = np.asarray(v.pose).copy()
        # the reconstruction thinks the camera crept towards the far wall (a slide parallel to
        # the wall it faces would be invisible to geometry)
        pose[2, 3] += 0.1 * m
        drifted.append(GlobalView(v.frame, pose, v.depth, v.intrinsics))
    good, bad = global_memory(views), global_memory(drifted)
    assert bad.raw is not None and good.raw is not None and bad.raw > 4 * good.raw


def test_non_finite_pose_names_the_first_bad_view() -> None:
    views = scene_views(6)
    pose = np.asarray(views[2].pose).copy()
    pose[0, 3] = np.nan
    views[2] = GlobalView(views[2].frame, pose, views[2].depth, views[2].intrinsics)
    depth = np.asarray(views[4].depth).copy()
    depth[3, 3] = np.inf
    views[4] = GlobalView(views[4].frame, views[4].pose, depth, views[4].intrinsics)
    res = global_memory(views)
    assert res.status == "not_applicable"
    assert res.reason == "view at frame 32: non-finite pose"
    views[2] = scene_views(6)[2]
    res = global_memory(views)
    assert res.reason == "view at frame 64: non-finite depth at confident pixels"


def test_fewer_than_two_usable_views() -> None:
    views = scene_views(3)
    dead = np.zeros(np.asarray(views[0].depth).shape, dtype=bool)
    views = [views[0]] + [
        GlobalView(v.frame, v.pose, v.depth, v.intrinsics, dead) for v in views[1:]
    ]
    res = global_memory(views)
    assert res.status == "not_applicable"
    assert res.reason is not None and res.reason.startswith("fewer than 2 usable views")
    assert global_memory(views[:1]).status == "not_applicable"
    assert global_memory([]).status == "not_applicable"


def test_no_covisible_pair() -> None:
    k = intrinsics(24, 32)
    front = yaw_pose(0.0, (0.0, 0.0, 0.0))
    back = yaw_pose(math.pi, (0.0, 0.0, 0.0))
    views = [
        GlobalView(0, front, render_box(front, k, 24, 32), k),
        GlobalView(16, back, render_box(back, k, 24, 32), k),
    ]
    res = global_memory(views)
    assert res.status == "not_applicable"
    assert res.reason is not None and res.reason.startswith("no co-visible view pair")


def test_no_reconstruction_is_not_applicable_with_reason() -> None:
    res = global_memory(None)
    assert res.status == "not_applicable" and res.reason
    res = global_memory(None, unavailable_reason="VGGT weights not found")
    assert res.reason == "VGGT weights not found"


def test_bit_identical_on_repeat() -> None:
    views = scene_views(10)
    a = global_memory(views, max_points=300).to_json()
    b = global_memory(views, max_points=300).to_json()
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_malformed_views_raise() -> None:
    v = scene_views(2)
    with pytest.raises(ValueError, match="pose"):
        covisibility_errors([GlobalView(0, np.eye(3), v[0].depth, v[0].intrinsics), v[1]])
    with pytest.raises(ValueError, match="duplicate"):
        covisibility_errors([v[0], v[0]])


def test_model_aggregation() -> None:
    details = [{"e": 0.01}, {"e": 0.03}]
    assert model_value("global_memory", details) == pytest.approx(100 / (1 + 0.02 / 0.05))


def test_diagnostics_match_the_naive_pool() -> None:
    """mean_error and share_over_tau_g describe the whole pool (the median is blind to a
    minority of bad points): checked against the naive reference on a half-perturbed scene."""
    views = scene_views(8, h=48, w=64, turn=0.6)
    views = [
        GlobalView(v.frame, v.pose, np.asarray(v.depth) * 1.15, v.intrinsics) if m >= 6 else v
        for m, v in enumerate(views)
    ]
    ref_err, _ = n_errors(views, max_points=200)
    res = global_memory(views, max_points=200)
    assert res.status == "official"
    ref = np.asarray(ref_err)
    share = float(np.mean(ref > 0.05))
    assert 0.0 < share < 0.5  # a minority is bad: the median alone would not say so
    assert res.details["share_over_tau_g"] == pytest.approx(share, abs=1e-12)
    assert res.details["mean_error"] == pytest.approx(float(ref.mean()), rel=1e-9)
    assert res.details["e"] == pytest.approx(float(np.median(ref)), rel=1e-9, abs=1e-12)
