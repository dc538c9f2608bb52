"""The procedural world: deterministic, geometrically exact, obeys keys, and each defect does
what it says. Everything is checked against the world's own ground truth (poses, depth) or
against an independent measurement (OpenCV DIS optical flow)."""

from __future__ import annotations

import itertools
import math
import time

import cv2
import numpy as np
import numpy.typing as npt
import pytest
from streameval.protocol.suites import WORLDMARK, WORLDMARK_SECONDS_PER_KEY
from streameval.worlds.procedural_world import (
    DEFECT_PRESETS,
    ProceduralWorld,
    WorldConfig,
    WorldFrame,
    world_config_for_defect,
)
from streameval.worlds.procedural_world.camera import CameraState, advance
from streameval.worlds.procedural_world.defects import KeyResponse
from streameval.worlds.procedural_world.looks import (
    CLEAN_LOOK,
    look_for_cut,
    look_textures,
    palette_matrix,
)
from streameval.worlds.procedural_world.render import Renderer
from streameval.worlds.procedural_world.scene import (
    BLOCK_HALF_M,
    CELL_M,
    CLEARANCE_M,
    FORGET_SCALE,
    FORGET_SHIFT_M,
    HEIGHT_RANGE_M,
    AppearanceMemory,
    ObjectField,
    footprint_distance,
    objects_in_cells,
)

from streameval.core.arrays import F64
from streameval.core.episode.geometry import FrameGeometry
from streameval.errors import BadInputError, UnknownKeyError, UnknownNameError
from streameval.metrics.fits.geometry import views_from_frames
from streameval.metrics.memory.global_memory import covisibility_errors

FPS = 16.0


EXACT = WorldConfig(depth_downsample=4, depth_range_m=None, depth_resolvable_step=None)
"""The renderer's exact depth on a 1/4 grid: what the geometry tests check (the default world
reports full-resolution depth with a range and unknown pixels, ``depth_output``)."""


def run(keys: str, config: WorldConfig | None = None) -> list[WorldFrame]:
    world = ProceduralWorld(config)
    return [world.step(k) for k in keys]


POSE_ONLY = {"width": 64, "height": 44}
"""A tiny image for the tests that read only the poses (the key response does not depend on the
image size): the render is most of such a test's time."""


def relative(a: WorldFrame, b: WorldFrame) -> F64:
    """Pose of ``b`` in the camera frame of ``a``."""
    rel: F64 = np.linalg.inv(a.pose) @ b.pose
    return rel


def yaw_of(frame: WorldFrame) -> float:
    """Heading in radians, positive when turned right (forward vector toward +x)."""
    return math.atan2(frame.pose[0, 2], frame.pose[2, 2])


def gray(frame: WorldFrame) -> npt.NDArray[np.uint8]:
    out: npt.NDArray[np.uint8] = np.asarray(
        cv2.cvtColor(frame.image, cv2.COLOR_RGB2GRAY), dtype=np.uint8
    )
    return out


# --------------------------------------------------------------------------- basics


def test_frame_contents_and_intrinsics() -> None:
    cfg = WorldConfig()
    frame = ProceduralWorld(cfg).step("W")
    assert frame.image.shape == (432, 640, 3) and frame.image.dtype == np.uint8
    assert frame.depth.shape == (432, 640) and frame.depth.dtype == np.float32
    assert frame.pose.shape == (4, 4) and frame.intrinsics.shape == (3, 3)
    f = 320.0 / math.tan(math.radians(35.0))
    expected = np.array([[f, 0.0, 319.5], [0.0, f, 215.5], [0.0, 0.0, 1.0]])
    np.testing.assert_allclose(frame.intrinsics, expected)
    assert frame.key == "W"
    # the camera stays at eye height, upright
    assert frame.pose[1, 3] == pytest.approx(-cfg.camera_height)
    np.testing.assert_allclose(frame.pose[:3, 1], [0.0, 1.0, 0.0], atol=1e-12)
    # depth: positive where known, finite on the near ground, inf only on the infinitely far
    # backdrop, NaN (unknown) beyond the range and on the grazing ground (``depth_output``)
    known = ~np.isnan(frame.depth)
    assert (frame.depth[known] > 0).all()
    assert np.isfinite(frame.depth[-1]).all()
    assert np.isinf(frame.depth).any()
    assert (~known).any() and np.nanmax(frame.depth[np.isfinite(frame.depth)]) <= 12.0


def test_determinism_and_reset() -> None:
    keys = "WWWWRRRAAA-LLDDSS"
    a, b = run(keys), run(keys)
    for fa, fb in zip(a, b, strict=True):
        assert np.array_equal(fa.image, fb.image)
        assert np.array_equal(fa.pose, fb.pose)
        assert np.array_equal(fa.depth, fb.depth, equal_nan=True)
    world = ProceduralWorld()
    first = [world.step(k) for k in keys[:5]]
    world.reset()
    again = [world.step(k) for k in keys[:5]]
    assert all(np.array_equal(x.image, y.image) for x, y in zip(first, again, strict=True))
    other = run(keys[:3], WorldConfig(seed=1))
    assert np.abs(other[-1].image.astype(int) - a[2].image.astype(int)).mean() > 10


def test_unknown_key_and_preset_names_fail_loudly() -> None:
    with pytest.raises(UnknownKeyError):
        ProceduralWorld().step("Q")
    with pytest.raises(UnknownNameError, match="did you mean 'delay'"):
        world_config_for_defect("dealy")
    with pytest.raises(UnknownNameError, match=r"known presets: .*wrong_direction"):
        world_config_for_defect("nonsense-name")
    with pytest.raises(BadInputError, match="key_map"):
        WorldConfig(key_map={"A": "X"})
    # still ValueErrors, as they were before they joined the error tree
    with pytest.raises(ValueError, match="seed must be >= 0"):
        WorldConfig(seed=-1)
    with pytest.raises(ValueError, match="did you mean 'delay'"):
        world_config_for_defect("dealy")
    for name in (
        "clean",
        "delay",
        "wrong_direction",
        "swap_lr",
        "leak_yaw",
        "hiccup",
        "decay",
        "freeze",
        "hard_cut",
        "forget",
        "blur",
        "noise",
    ):
        assert name in DEFECT_PRESETS
        world_config_for_defect(name)
    assert world_config_for_defect("delay", seed=3).seed == 3


def test_lowercase_keys_are_accepted() -> None:
    assert ProceduralWorld().step("w").key == "W"


# ---------------------------------------------------------------------- key motion


@pytest.mark.parametrize(
    ("key", "axis", "sign"),
    [("W", 2, 1.0), ("S", 2, -1.0), ("A", 0, -1.0), ("D", 0, 1.0)],
)
def test_translation_keys_move_along_camera_axes(key: str, axis: int, sign: float) -> None:
    cfg = WorldConfig()
    frames = run(key * 17)
    rel = relative(frames[0], frames[16])  # 16 frames = 1 s of video
    speed = cfg.forward_speed if key in "WS" else cfg.strafe_speed
    expected = np.zeros(3)
    expected[axis] = sign * speed
    np.testing.assert_allclose(rel[:3, 3], expected, atol=1e-9)
    np.testing.assert_allclose(rel[:3, :3], np.eye(3), atol=1e-12)


@pytest.mark.parametrize(("key", "sign"), [("L", -1.0), ("R", 1.0)])
def test_yaw_keys_turn_in_place(key: str, sign: float) -> None:
    cfg = WorldConfig()
    frames = run(key * 17)
    turned = yaw_of(frames[16]) - yaw_of(frames[0])
    assert turned == pytest.approx(sign * math.radians(cfg.yaw_rate_deg), abs=1e-9)
    np.testing.assert_allclose(frames[16].pose[:3, 3], frames[0].pose[:3, 3], atol=1e-12)


def test_no_key_stands_still() -> None:
    frames = run("WW---")
    assert np.array_equal(frames[2].pose, frames[4].pose)
    assert np.array_equal(frames[2].image, frames[4].image)


def test_worldmark_paths_keep_clear_of_objects() -> None:
    """The default speeds keep every worldmark sequence on the object-free streets, so the
    clean world never walks through (and culls) an object."""
    cfg = WorldConfig()
    field = ObjectField(cfg.seed, AppearanceMemory())
    per_key = round(WORLDMARK_SECONDS_PER_KEY * FPS)
    for keys in WORLDMARK.values():
        response = KeyResponse(cfg)
        state = CameraState()
        nearest = math.inf
        for frame, key in enumerate(k for k in keys for _ in range(per_key)):
            m = response.motion(frame, key)
            state = advance(state, m.forward, m.right, m.yaw, 1.0 / cfg.fps)
            if frame % 4 == 0:
                near = field.near(state.x, state.z, 4.0)
                distances = footprint_distance(near, state.x, state.z)
                if distances.size:
                    nearest = min(nearest, float(distances.min()))
        assert nearest > 1.0 > CLEARANCE_M, keys


# ------------------------------------------------------------------- geometry


def _grid_pixels(frame: WorldFrame) -> tuple[F64, F64]:
    """Image coordinates of the depth pixels (cv2.resize convention)."""
    h, w = frame.depth.shape
    big_h, big_w = frame.image.shape[:2]
    u = (np.arange(w) + 0.5) * big_w / w - 0.5
    v = (np.arange(h) + 0.5) * big_h / h - 0.5
    uu, vv = np.meshgrid(u, v)
    return uu, vv


@pytest.mark.parametrize("t", [4, 12, 19])
def test_depth_and_pose_reproject_onto_the_next_frames(t: int) -> None:
    """Back-project frame t with its depth and pose, project into frame t+2: the depth map
    there agrees, and the image there shows the same content (a shuffle does not)."""
    frames = run("W" * 10 + "R" * 6 + "A" * 8, EXACT)
    a, b = frames[t], frames[t + 2]
    k = a.intrinsics
    uu, vv = _grid_pixels(a)
    z = a.depth.astype(np.float64)
    seen = np.isfinite(z)
    cam = np.stack([(uu - k[0, 2]) / k[0, 0] * z, (vv - k[1, 2]) / k[1, 1] * z, z], -1)[seen]
    world = cam @ a.pose[:3, :3].T + a.pose[:3, 3]
    to_b = np.linalg.inv(b.pose)
    cb = world @ to_b[:3, :3].T + to_b[:3, 3]
    u1 = k[0, 0] * cb[:, 0] / cb[:, 2] + k[0, 2]
    v1 = k[1, 1] * cb[:, 1] / cb[:, 2] + k[1, 2]
    inside = (u1 >= 0) & (u1 <= 639) & (v1 >= 0) & (v1 <= 431) & (cb[:, 2] > 0)
    assert inside.mean() > 0.8
    hb, wb = b.depth.shape
    j = np.clip(np.round((u1[inside] + 0.5) * wb / 640 - 0.5).astype(int), 0, wb - 1)
    i = np.clip(np.round((v1[inside] + 0.5) * hb / 432 - 0.5).astype(int), 0, hb - 1)
    ratio = cb[inside, 2] / b.depth[i, j]
    assert np.mean(np.abs(ratio - 1.0) < 0.05) > 0.9

    def sample(img: npt.NDArray[np.uint8], x: F64, y: F64) -> F64:
        g = img.astype(np.float32)
        out = cv2.remap(g, x.astype(np.float32)[None], y.astype(np.float32)[None], cv2.INTER_LINEAR)
        row: F64 = np.asarray(out[0], dtype=np.float64)
        return row

    sa = sample(gray(a), uu[seen][inside], vv[seen][inside])
    sb = sample(gray(b), u1[inside], v1[inside])
    error = np.abs(sa - sb).mean()
    shuffled = np.abs(sa - np.random.default_rng(0).permutation(sb)).mean()
    assert error < 0.15 * shuffled, (error, shuffled)


# ------------------------------------------------------------------ optical flow


def _dis_signals(frames: list[WorldFrame]) -> tuple[float, float]:
    """Mean Sx and Srad over stride-2 DIS flow pairs
    (docs/methods.md#analysis-frame-and-flow-units)."""
    dis = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_FAST)  # type: ignore[attr-defined]
    h, w = frames[0].image.shape[:2]
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    rx, ry = xs - (w - 1) / 2.0, ys - (h - 1) / 2.0
    norm = np.hypot(rx, ry)
    norm[norm == 0] = 1.0
    rx, ry = rx / norm, ry / norm
    sx, srad = [], []
    for i in range(0, len(frames) - 2, 2):
        flow = dis.calc(gray(frames[i]), gray(frames[i + 2]), None)
        sx.append(float(flow[..., 0].mean()))
        srad.append(float((flow[..., 0] * rx + flow[..., 1] * ry).mean()))
    return float(np.mean(sx)), float(np.mean(srad))


@pytest.mark.parametrize(
    ("key", "channel", "sign"),
    [("W", 1, 1), ("S", 1, -1), ("A", 0, 1), ("D", 0, -1), ("L", 0, 1), ("R", 0, -1)],
)
def test_dis_flow_has_the_spec_sign(key: str, channel: int, sign: int) -> None:
    """docs/methods.md#keys: W +Srad, S −Srad, A +Sx, D −Sx, L +Sx, R −Sx, measured by DIS."""
    signals = _dis_signals(run(key * 22))
    print(f"{key}: Sx={signals[0]:+.2f} Srad={signals[1]:+.2f}")
    assert sign * signals[channel] > 2.0, signals


# ---------------------------------------------------------------------- defects


def _steps(frames: list[WorldFrame]) -> F64:
    """Per-frame motion in the previous camera frame: (dx, dz, dyaw)."""
    out = []
    for a, b in itertools.pairwise(frames):
        rel = relative(a, b)
        out.append((rel[0, 3], rel[2, 3], math.atan2(rel[0, 2], rel[2, 2])))
    return np.array(out)


def test_delay_keeps_obeying_the_previous_key() -> None:
    cfg = world_config_for_defect("delay", **POSE_ONLY)
    d = round(1.5 * FPS)  # 24 frames
    steps = _steps(run("W" * 40 + "A" * 40, cfg))  # steps[i] = motion of frame i + 1
    step = cfg.forward_speed / FPS
    np.testing.assert_allclose(steps[: d - 1], 0.0, atol=1e-12)  # nothing obeyed yet
    np.testing.assert_allclose(steps[d - 1 : 40 + d - 1, 1], step, atol=1e-9)  # W, late
    np.testing.assert_allclose(steps[40 + d - 1 :, 0], -cfg.strafe_speed / FPS, atol=1e-9)


def test_wrong_direction_and_swap() -> None:
    wrong = world_config_for_defect("wrong_direction", **POSE_ONLY)
    assert _steps(run("AAA", wrong))[-1][0] > 0  # A moves right
    assert _steps(run("WWW", wrong))[-1][1] < 0  # W moves back
    assert _steps(run("LLL", wrong))[-1][2] > 0  # L turns right
    swapped = world_config_for_defect("swap_lr", **POSE_ONLY)
    assert _steps(run("LLL", swapped))[-1][2] > 0
    assert _steps(run("AAA", swapped))[-1][0] < 0  # A/D untouched


def test_leak_yaw_turns_while_strafing() -> None:
    cfg = world_config_for_defect("leak_yaw", **POSE_ONLY)
    step = _steps(run("AAA", cfg))[-1]
    assert step[0] < 0  # still strafes left
    yaw_step = cfg.leak_yaw_on_strafe * math.radians(cfg.yaw_rate_deg) / FPS
    assert step[2] == pytest.approx(-yaw_step)  # and yaws L
    leak = world_config_for_defect("leak_strafe", **POSE_ONLY)
    step = _steps(run("WWW", leak))[-1]
    assert step[1] > 0 and step[0] == pytest.approx(0.5 * leak.strafe_speed / FPS, rel=1e-6)


def test_hiccup_stalls_periodically() -> None:
    cfg = world_config_for_defect("hiccup", **POSE_ONLY)  # 0.6 s stall at the end of every 2 s
    frames = run("W" * 70, cfg)
    moved = np.array([np.linalg.norm(s[:2]) > 1e-9 for s in _steps(frames)])
    t = np.arange(1, len(frames)) / FPS  # video time of the frame each step produced
    stalled = (t % 2.0) >= 1.4 - 1e-9
    assert np.array_equal(moved, ~stalled)


def test_speed_decays_with_time_since_the_key() -> None:
    cfg = world_config_for_defect("decay", **POSE_ONLY)
    assert cfg.speed_decay_tau_s is not None
    speed = np.abs(_steps(run("W" * 70, cfg))[:, 1]) * FPS
    # frame i+1 is (i+1)/fps after the key took effect at frame 0
    expected = cfg.forward_speed * np.exp(-(np.arange(1, 70) / FPS) / cfg.speed_decay_tau_s)
    np.testing.assert_allclose(speed, expected, rtol=1e-9)


def test_freeze_gives_identical_images() -> None:
    frames = run("WWAALLRR", world_config_for_defect("freeze"))
    assert all(np.array_equal(f.image, frames[0].image) for f in frames)
    assert all(np.array_equal(f.pose, frames[0].pose) for f in frames)
    later = run("W" * 12, world_config_for_defect("freeze", freeze_after_s=0.5))
    assert not np.array_equal(later[0].pose, later[8].pose)
    assert np.array_equal(later[8].image, later[11].image)


def test_hard_cut_teleports_and_switches_the_look() -> None:
    cfg = world_config_for_defect("hard_cut", hard_cut_every_s=1.0)
    world = ProceduralWorld(cfg)
    frames, looks = [], []
    for _ in range(36):
        frames.append(world.step("W"))
        looks.append(world.look.index)
    jumps = [np.linalg.norm(b.pose[:3, 3] - a.pose[:3, 3]) for a, b in itertools.pairwise(frames)]
    assert jumps[15] > 1000.0 and jumps[31] > 1000.0  # frames 16, 32 = t 1.0 s, 2.0 s
    others = [j for i, j in enumerate(jumps) if i not in (15, 31)]
    assert max(others) < 0.2
    assert looks == [0] * 16 + [1] * 16 + [2] * 4
    # before the first cut the world is the clean one, bit for bit
    clean = run("W" * 16)
    assert all(np.array_equal(a.image, b.image) for a, b in zip(clean, frames[:16], strict=True))
    for cut in (16, 32):
        before, after = frames[cut - 1].image, frames[cut].image
        assert np.abs(after.astype(int) - before.astype(int)).mean() > 20
        # a new palette: the mean colour of the whole frame moves, far more than one step of
        # motion moves it (the teleport alone left sky and ground colours as they were)
        shift = np.abs(after.reshape(-1, 3).mean(0) - before.reshape(-1, 3).mean(0)).max()
        step = np.abs(
            frames[cut + 1].image.reshape(-1, 3).mean(0) - after.reshape(-1, 3).mean(0)
        ).max()
        assert shift > 15.0 > 10 * step, (cut, shift, step)


def test_looks_are_seeded_and_change_only_the_image() -> None:
    assert look_for_cut(0, 0) is CLEAN_LOOK and not CLEAN_LOOK.recolours
    assert look_for_cut(3, 2) == look_for_cut(3, 2)
    assert look_for_cut(3, 2) != look_for_cut(4, 2) != look_for_cut(3, 3)
    assert all(look_for_cut(0, k).recolours for k in range(1, 20))
    with pytest.raises(ValueError):
        look_for_cut(0, -1)
    cfg = WorldConfig()
    renderer = Renderer(
        width=cfg.width,
        height=cfg.height,
        fov_deg=cfg.fov_deg,
        camera_height=cfg.camera_height,
        depth_downsample=cfg.depth_downsample,
        seed=cfg.seed,
        memory=AppearanceMemory(),
    )
    state = CameraState(x=1.0, z=-3.0, heading=0.3)
    plain = renderer.render(state)
    looked = renderer.render(state, look_for_cut(0, 1))
    assert np.array_equal(plain.depth, looked.depth)
    assert plain.objects_in_view == looked.objects_in_view
    assert np.abs(plain.image.astype(int) - looked.image.astype(int)).mean() > 20
    # recolouring leaves the shared texture bank alone
    assert np.array_equal(renderer.render(state, CLEAN_LOOK).image, plain.image)
    textures = look_textures(renderer.bank, renderer.backdrop_padded, look_for_cut(0, 1))
    assert textures.atlas.shape == renderer.bank.atlas.shape
    assert not textures.atlas.flags.writeable


def test_palette_matrix() -> None:
    np.testing.assert_allclose(palette_matrix(0.0, 1.0, 1.0), np.eye(3).ravel(), atol=1e-12)
    m = np.asarray(palette_matrix(137.5, 1.0, 1.0)).reshape(3, 3)
    np.testing.assert_allclose(m @ np.ones(3), np.ones(3), atol=1e-12)  # grey stays grey
    np.testing.assert_allclose(m @ m.T, np.eye(3), atol=1e-12)  # a rotation
    grey = np.asarray(palette_matrix(0.0, 0.0, 1.0)).reshape(3, 3) @ np.array([200.0, 50.0, 10.0])
    np.testing.assert_allclose(grey, np.full(3, 0.299 * 200 + 0.587 * 50 + 0.114 * 10))
    np.testing.assert_allclose(np.asarray(palette_matrix(0.0, 1.0, 0.5)), 0.5 * np.eye(3).ravel())


def test_forget_changes_content_after_a_full_turn() -> None:
    """Turn 360° in place: the clean world shows the same view again; the forgetting world
    has regenerated everything that left the view."""
    n = 16  # 360° at 360°/s... in 16 frames of 22.5°
    clean = run("L" * n, WorldConfig(yaw_rate_deg=360.0))
    forget = run("L" * n, world_config_for_defect("forget", yaw_rate_deg=360.0))
    start_clean = ProceduralWorld(WorldConfig()).step("-")
    assert yaw_of(clean[-1]) == pytest.approx(0.0, abs=1e-9)
    same = np.abs(clean[-1].image.astype(int) - start_clean.image.astype(int)).mean()
    changed = np.abs(forget[-1].image.astype(int) - start_clean.image.astype(int)).mean()
    assert same < 0.5
    assert changed > 15
    # depth changes too: objects were re-drawn with new shapes and positions
    assert not np.array_equal(forget[-1].depth, clean[-1].depth)
    # before anything left the view the two worlds are identical
    assert np.array_equal(forget[0].image, clean[0].image)


def test_forget_out_and_back() -> None:
    """Walk forward and back to the same pose: objects passed on the way are different."""
    keys = "W" * 40 + "S" * 40
    # at 320×216: the mean differences are 0.0 and 10.1 (10.6 at 640×432)
    clean = run(keys, WorldConfig(width=320, height=216))
    forget = run(keys, world_config_for_defect("forget", width=320, height=216))
    start_frame = ProceduralWorld(WorldConfig(width=320, height=216)).step("-")
    np.testing.assert_allclose(clean[-1].pose, start_frame.pose, atol=1e-9)
    start = start_frame.image.astype(int)
    assert np.abs(clean[-1].image.astype(int) - start).mean() < 0.5
    assert np.abs(forget[-1].image.astype(int) - start).mean() > 5


def test_forgotten_objects_move_and_resize_within_their_block() -> None:
    i, j = np.meshgrid(np.arange(-20, 20), np.arange(-20, 20), indexing="ij")
    ii, jj = i.ravel(), j.ravel()
    clean = objects_in_cells(ii, jj, 0, np.zeros_like(ii))
    for gen in (1, 2):
        forgotten = objects_in_cells(ii, jj, 0, np.full_like(ii, gen))
        # the same cells hold an object of the same kind
        assert np.array_equal(forgotten.cell_i, clean.cell_i)
        assert np.array_equal(forgotten.cell_j, clean.cell_j)
        assert np.array_equal(forgotten.kind, clean.kind)
        shift = np.hypot(forgotten.x - clean.x, forgotten.z - clean.z)
        assert shift.max() <= FORGET_SHIFT_M[1] + 1e-9
        assert np.mean(shift >= FORGET_SHIFT_M[0]) > 0.9  # a big box may have less room
        ratio = forgotten.half_x / clean.half_x
        unclipped = (forgotten.half_x > 0.12) & (forgotten.half_x < 1.5)
        change = np.abs(ratio[unclipped] - 1.0)
        assert change.min() >= FORGET_SCALE[0] - 1e-9 and change.max() <= FORGET_SCALE[1] + 1e-9
        lo, hi = HEIGHT_RANGE_M
        assert forgotten.height.min() >= lo and forgotten.height.max() <= hi
        assert not np.array_equal(forgotten.height, clean.height)
        assert not np.array_equal(forgotten.material, clean.material)
        # the footprint stays inside the block, so the streets stay clear
        cx = (forgotten.cell_i + 0.5) * CELL_M
        cz = (forgotten.cell_j + 0.5) * CELL_M
        assert (np.abs(forgotten.x - cx) + forgotten.half_x).max() <= BLOCK_HALF_M + 1e-9
        assert (np.abs(forgotten.z - cz) + forgotten.half_z).max() <= BLOCK_HALF_M + 1e-9


def test_forget_is_visible_to_geometry_on_a_revisit() -> None:
    """Back at the same pose after a full turn, the forgetting world's depth disagrees with
    what it showed there before by amounts the co-visibility test of Global Memory keeps
    (moved objects, not vanished ones); the clean world agrees exactly."""

    def revisit_errors(config: WorldConfig) -> F64:
        frames = run("L" * 17, config)  # frames 0 and 16: the same pose, 360° apart
        np.testing.assert_allclose(frames[16].pose, frames[0].pose, atol=1e-9)
        views = views_from_frames(
            [
                FrameGeometry(i, f.pose, f.depth, f.intrinsics, f.image.shape[:2])
                for i, f in ((0, frames[0]), (16, frames[16]))
            ]
        )
        errors: F64 = covisibility_errors(views, stride=1).errors
        return errors

    exact = {"depth_downsample": 4, "depth_range_m": None, "depth_resolvable_step": None}
    clean = revisit_errors(WorldConfig(yaw_rate_deg=360.0, **exact))
    forget = revisit_errors(world_config_for_defect("forget", yaw_rate_deg=360.0, **exact))
    # Same pose, yet the reference's floor lookup lands on the neighbouring pixel wherever the
    # projection falls a hair below a whole pixel, so the clean world has its own share of
    # errors at depth edges (docs/methods.md#global_memory); the forgetting world must add to it.
    # Measured 3143 vs 3047 points (of ~16,800). It was 3381 vs 3084 while fully fogged surfaces
    # (56-62 m, drawn as pure backdrop) still had finite depth: a regenerated object there counted
    # although no image shows it, so the margin is now 50 points, not 200.
    assert clean.size > 10_000
    base = int(np.count_nonzero(clean > 0.05))  # TAU_G
    moved = int(np.count_nonzero(forget > 0.05))
    print(f"\nrevisit after 360°: > 0.05 on {moved} of {forget.size} points (clean {base})")
    assert moved > base + 50


@pytest.mark.parametrize("name", ["blur", "noise"])
def test_image_defects_leave_poses_alone(name: str) -> None:
    keys = "WWRRAA"
    clean = run(keys)
    spoiled = run(keys, world_config_for_defect(name))
    for c, s in zip(clean, spoiled, strict=True):
        assert np.array_equal(c.pose, s.pose)
        assert np.array_equal(c.depth, s.depth, equal_nan=True)
        assert np.abs(c.image.astype(int) - s.image.astype(int)).mean() > 2
    assert np.array_equal(run(keys, world_config_for_defect(name))[-1].image, spoiled[-1].image)


# ------------------------------------------------------------------ performance


# A wall-clock budget: under `make test`'s parallel workers on two cores it measures the
# neighbours (CI: 68 ms and 3.02 ms against 40 and 3.0); `make test-long` runs it alone.
@pytest.mark.long
def test_render_time() -> None:
    world = ProceduralWorld()
    keys = "W" * 50 + "R" * 50 + "A" * 50 + "L" * 50
    world.step("W")
    start = time.perf_counter()
    for key in keys:
        world.step(key)
    per_frame = (time.perf_counter() - start) / len(keys) * 1e3
    print(f"procedural world: {per_frame:.2f} ms per 640x432 frame")
    assert per_frame < 40.0
