"""Adapters for the bridge tests, imported by the *model's* interpreter: numpy only, no
streameval. ``PanWorld`` pans a seeded texture (A/D and L/R move it, W/S zoom) and chatters on
stdout as research code does (print and a raw write to file descriptor 1); the others fail
in the ways a worker can: a segfault, a hang, a bad frame, each at a given frame of the first
episode only (the next episode gets a fresh worker)."""

from __future__ import annotations

import ctypes
import os
import sys
import time

import numpy as np

H, W = 180, 320


class PanWorld:
    name = "pan-world"
    fps = 16

    def __init__(self) -> None:
        rng = np.random.default_rng(3)
        small = rng.random((H // 6, (W * 3) // 6, 3))
        self.texture = (np.kron(small, np.ones((6, 6, 1))) * 255).astype(np.uint8)
        self.x, self.zoom, self.k = 0.0, 1.0, 0
        self.image: np.ndarray | None = None
        self.prompt: str | None = None
        print("loading weights: 100%")

    def reset(self, image: np.ndarray | None = None, prompt: str | None = None) -> None:
        self.x, self.zoom, self.k = 0.0, 1.0, 0
        self.image, self.prompt = image, prompt

    def step(self, key: str) -> np.ndarray:
        self.k += 1
        print(f"step {self.k} {key}")  # research code prints
        if self.k % 7 == 0:
            os.write(1, b"a C library writes to fd 1\n")
        self.x += {"A": 5.0, "D": -5.0, "L": 5.0, "R": -5.0}.get(key, 0.0)
        self.zoom *= {"W": 1.02, "S": 1 / 1.02}.get(key, 1.0)
        if self.image is not None and self.k == 1:
            return self.image  # the start image back: the host checks what arrived
        shift = round(self.x) % self.texture.shape[1]
        view = np.roll(self.texture, shift, axis=1)[:, :W]
        if abs(self.zoom - 1.0) > 1e-6:
            ys = ((np.arange(H) - H / 2) / self.zoom + H / 2).astype(int).clip(0, H - 1)
            xs = ((np.arange(W) - W / 2) / self.zoom + W / 2).astype(int).clip(0, W - 1)
            view = view[ys][:, xs]
        return np.ascontiguousarray(view)


def _first_episode() -> bool:
    """True until a marker file exists (it is made on the first failure)."""
    marker = os.environ.get("BRIDGE_TEST_MARKER", "")
    return bool(marker) and not os.path.exists(marker)


def _mark() -> None:
    with open(os.environ["BRIDGE_TEST_MARKER"], "w") as f:
        f.write("failed once")


class Crashing(PanWorld):
    def step(self, key: str) -> np.ndarray:
        if self.k == 20 and _first_episode():
            _mark()
            sys.stderr.write("about to dereference NULL\n")
            sys.stderr.flush()
            ctypes.string_at(0)  # SIGSEGV
        return super().step(key)


class Hanging(PanWorld):
    def step(self, key: str) -> np.ndarray:
        if self.k == 20 and _first_episode():
            _mark()
            time.sleep(3600)
        return super().step(key)


class BadFrame(PanWorld):
    def step(self, key: str) -> np.ndarray:
        frame = super().step(key)
        return frame[:, :, :2].copy() if self.k == 20 else frame


class WithGeometry(PanWorld):
    class Frame:
        def __init__(self, image: np.ndarray, k: int) -> None:
            self.image = image
            self.pose = np.eye(4)
            self.pose[0, 3] = 0.1 * k
            self.intrinsics = np.array([300.0, 300.0, W / 2, H / 2])
            self.depth = np.full((H, W), 2.0 + k, dtype=np.float32)

    def step(self, key: str) -> object:
        return WithGeometry.Frame(super().step(key), self.k)


def pan_world() -> PanWorld:
    return PanWorld()


def crashing() -> Crashing:
    return Crashing()


def hanging() -> Hanging:
    return Hanging()


def bad_frame() -> BadFrame:
    return BadFrame()


def with_geometry() -> WithGeometry:
    return WithGeometry()


class GroundWorld(PanWorld):
    """Numpy only, with parallax, so its keys can be told apart by the motion-type fit: the
    texture is a cylinder around a pinhole camera of 70°, a turn rotates the camera about its
    axis (every pixel as a real yaw moves it), a strafe shifts each row by its nearness (far
    above the horizon, nearer towards the bottom, as over a ground plane), W/S zoom.
    ``crossed``: its L and R wired the wrong way round, as an adapter's sign slip would."""

    name = "ground-world"

    def __init__(self, crossed: bool = False) -> None:
        super().__init__()
        f = (W / 2) / np.tan(np.radians(35.0))
        x = (np.arange(W)[None, :] - W / 2) / f
        y = (np.arange(H)[:, None] - H / 2) / f
        self.f, self.plane = f, x * np.ones((H, 1))  # the image plane, in focal lengths
        self.y = y
        self.per_radian = self.texture.shape[1] / (2 * np.pi)
        rows = np.arange(H, dtype=np.float64)
        self.nearness = 0.15 + 3.0 * np.clip((rows - H * 0.4) / (H * 0.6), 0.0, 1.0)[:, None]
        self.heading, self.offset = 0.0, np.zeros((H, 1))
        self.turn = {"L": 1.0, "R": -1.0} if crossed else {"L": -1.0, "R": 1.0}

    def reset(self, image: np.ndarray | None = None, prompt: str | None = None) -> None:
        super().reset(image, prompt)
        self.heading, self.offset = 0.0, np.zeros((H, 1))

    def step(self, key: str) -> np.ndarray:
        self.k += 1
        self.heading += np.radians(1.5) * self.turn.get(key, 0.0)
        self.offset += 2.0 * {"A": 1.0, "D": -1.0}.get(key, 0.0) * self.nearness
        self.zoom *= {"W": 1.02, "S": 1 / 1.02}.get(key, 1.0)
        # a strafe shifts the image plane's rows (in pixels), a turn the ray's azimuth
        plane = self.plane - self.offset / self.f
        cols = (self.heading + np.arctan(plane)) * self.per_radian
        rows = np.clip(H / 2 + self.f * self.y / np.sqrt(1 + plane * plane), 0, H - 1)
        view = self.texture[rows.astype(int), np.round(cols).astype(int) % self.texture.shape[1]]
        if abs(self.zoom - 1.0) > 1e-6:
            ys = ((np.arange(H) - H / 2) / self.zoom + H / 2).astype(int).clip(0, H - 1)
            xs = ((np.arange(W) - W / 2) / self.zoom + W / 2).astype(int).clip(0, W - 1)
            view = view[ys][:, xs]
        return np.ascontiguousarray(view)


def ground_world() -> GroundWorld:
    return GroundWorld()


def crossed_world() -> GroundWorld:
    return GroundWorld(crossed=True)
