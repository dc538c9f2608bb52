"""The procedural world's depth where the fog hides the ground, and the sunken streets of a
forgotten scene (``forget_scene_at_s``, ``relief``): exact geometry, checked by back-projecting
the depth with the true pose and by reprojecting it into a later frame."""

from __future__ import annotations

import numpy as np
from streameval.worlds.procedural_world import ProceduralWorld, WorldConfig, WorldFrame
from streameval.worlds.procedural_world.scene import CELL_M, FOG_END_M, PIT_DEPTH_M

from streameval.core.arrays import F64

# the renderer's exact depth on its former 1/4 grid (no range, no unknown pixels: ``depth_output``)
SMALL = {
    "width": 320,
    "height": 216,
    "depth_downsample": 4,
    "depth_range_m": None,
    "depth_resolvable_step": None,
}


def run(keys: str, config: WorldConfig) -> list[WorldFrame]:
    world = ProceduralWorld(config)
    return [world.step(k) for k in keys]


def world_points(frame: WorldFrame) -> tuple[F64, F64]:
    """World points of the finite depth pixels (cv2.resize pixel convention) and their
    horizontal distance from the camera."""
    h, w = frame.depth.shape
    big_h, big_w = frame.image.shape[:2]
    k = frame.intrinsics
    u = (np.arange(w) + 0.5) * big_w / w - 0.5
    v = (np.arange(h) + 0.5) * big_h / h - 0.5
    uu, vv = np.meshgrid(u, v)
    z = frame.depth.astype(np.float64)
    seen = np.isfinite(z)
    cam = np.stack([(uu - k[0, 2]) / k[0, 0] * z, (vv - k[1, 2]) / k[1, 1] * z, z], -1)[seen]
    pts: F64 = cam @ frame.pose[:3, :3].T + frame.pose[:3, 3]
    return pts, np.hypot(cam[:, 0], cam[:, 2])


def test_fully_fogged_surfaces_have_infinite_depth() -> None:
    frame = run("-", WorldConfig(**SMALL))[0]
    _, horizontal = world_points(frame)
    assert horizontal.max() < FOG_END_M
    # below the horizon there is no sky, yet the first row shows ground 150 m away, which the
    # fog turns into pure backdrop: depth inf there
    assert np.isinf(frame.depth[frame.depth.shape[0] // 2 :]).any()
    assert np.isfinite(frame.depth[-1]).all()


def test_forgotten_scene_sinks_the_streets_from_its_time_on() -> None:
    keys = "W" * 20
    clean = run(keys, WorldConfig(**SMALL))
    forgot = run(keys, WorldConfig(**SMALL, forget_scene_at_s=10 / 16))
    for a, b in zip(clean[:10], forgot[:10], strict=True):  # identical before
        assert np.array_equal(a.image, b.image) and np.array_equal(a.depth, b.depth)
    clean_y = world_points(clean[15])[0][:, 1]
    assert clean_y.max() < 1e-4  # nothing below the plane (y points down in OpenCV axes)
    pts, _ = world_points(forgot[15])
    sunk = pts[pts[:, 1] > 0.05]
    assert len(sunk) > 0.2 * len(pts)
    assert sunk[:, 1].max() <= PIT_DEPTH_M[1] + 1e-3
    # only streets sink: a sunk point is within 4 m of a lattice line (blocks stay level)
    to_line = np.minimum(
        np.abs(sunk[:, 0] - CELL_M * np.round(sunk[:, 0] / CELL_M)),
        np.abs(sunk[:, 2] - CELL_M * np.round(sunk[:, 2] / CELL_M)),
    )
    assert to_line.max() <= 4.0 + 1e-3
    assert not np.array_equal(forgot[15].image, clean[15].image)


def test_sunken_depth_reprojects_onto_the_next_frames() -> None:
    """The marched depth is a real surface: seen from two poses it agrees."""
    frames = run("W" * 4 + "R" * 8, WorldConfig(**SMALL, forget_scene_at_s=0.0))
    a, b = frames[6], frames[8]
    pts, _ = world_points(a)
    assert (pts[:, 1] > 0.05).mean() > 0.2
    to_b = np.linalg.inv(b.pose)
    cb = pts @ to_b[:3, :3].T + to_b[:3, 3]
    k = b.intrinsics
    big_h, big_w = b.image.shape[:2]
    u1 = k[0, 0] * cb[:, 0] / cb[:, 2] + k[0, 2]
    v1 = k[1, 1] * cb[:, 1] / cb[:, 2] + k[1, 2]
    inside = (u1 >= 0) & (u1 <= big_w - 1) & (v1 >= 0) & (v1 <= big_h - 1) & (cb[:, 2] > 0)
    hb, wb = b.depth.shape
    j = np.clip(np.round((u1[inside] + 0.5) * wb / big_w - 0.5).astype(int), 0, wb - 1)
    i = np.clip(np.round((v1[inside] + 0.5) * hb / big_h - 0.5).astype(int), 0, hb - 1)
    target = b.depth[i, j].astype(np.float64)
    ok = np.isfinite(target)
    ratio = cb[inside][ok, 2] / target[ok]
    assert np.mean(np.abs(ratio - 1.0) < 0.05) > 0.9
