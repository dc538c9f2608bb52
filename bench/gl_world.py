"""A third-party-rendered world for the validity bench: OpenGL (moderngl on Mesa's software
rasteriser, EGL, headless) draws a textured room with pillars from a camera whose true motion
is known. It sends bare frames (no depth, no pose), as most real model servers do.

Why: the procedural world is our own code; a metric that only holds on it may hold for our
renderer's sake. Mesa/OpenGL does perspective, texture filtering (mipmaps) and rasterisation
its own way. Requires ``pip install moderngl`` and a Mesa EGL driver (``libEGL_mesa``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import cv2
import numpy as np
import numpy.typing as npt

W, H, FOV_DEG, FPS = 640, 432, 70.0, 16.0
KEY_MOTION = {"W": (1, 0, 0), "S": (-1, 0, 0), "A": (0, -1, 0), "D": (0, 1, 0),
              "L": (0, 0, -1), "R": (0, 0, 1), "-": (0, 0, 0)}  # fmt: skip
OPPOSITE = {"W": "S", "S": "W", "A": "D", "D": "A", "L": "R", "R": "L", "-": "-"}

_VS = """#version 330
uniform mat4 mvp; in vec3 pos; in vec2 uv; out vec2 v_uv;
void main() { gl_Position = mvp * vec4(pos, 1.0); v_uv = uv; }"""
_FS = """#version 330
uniform sampler2D tex; in vec2 v_uv; out vec4 colour;
void main() { colour = texture(tex, v_uv); }"""


@dataclass
class GLConfig:
    """Speeds and defects (all off by default), mirroring the procedural world's."""

    forward_speed: float = 1.5  # m/s
    strafe_speed: float = 1.0  # m/s
    # 15 °/s: ~15 px of centre flow per two-frame pair, against a strafe's ~9 px. Latency's v_ref
    # is the P75 of |Sx| over the episode, shared by strafes and turns, so a world whose turns
    # move 4x more pixels than its strafes never sees a strafe reach half of it (30 °/s: clean
    # response_latency_trans 32.9); the bench's "fast turn" row runs 30 °/s.
    yaw_rate_deg: float = 15.0
    family: str = "noise"
    seed: int = 0
    still: bool = False
    reversed: bool = False
    delay_s: float = 0.0
    stall_period_s: float | None = None
    stall_s: float = 1.0
    leak_yaw_on_strafe: float = 0.0  # fraction of yaw_rate_deg while strafing
    jump_at_switch: bool = False
    blur_sigma: float = 0.0
    keys: list[str] = field(default_factory=list)


def _quad(p0: tuple[float, ...], e1: tuple[float, ...], e2: tuple[float, ...]) -> list[float]:
    a, b, c = np.array(p0), np.array(e1), np.array(e2)
    u, v = np.linalg.norm(b) / 4.0, np.linalg.norm(c) / 4.0  # texture tiles every 4 m
    corners = [
        (a, 0, 0),
        (a + b, u, 0),
        (a + b + c, u, v),
        (a, 0, 0),
        (a + b + c, u, v),
        (a + c, 0, v),
    ]
    return [float(q) for p, s, t in corners for q in (*p, s, t)]


def _scene(seed: int) -> npt.NDArray[np.float32]:
    """A 24 m × 24 m room, 4 m high, with 10 pillars away from the start lines."""
    r, h = 12.0, 4.0
    tri: list[float] = []
    tri += _quad((-r, 0, -r), (2 * r, 0, 0), (0, 0, 2 * r))  # floor (y up)
    tri += _quad((-r, h, -r), (0, 0, 2 * r), (2 * r, 0, 0))  # ceiling
    for (x, z), (dx, dz) in (((-r, -r), (2 * r, 0)), ((r, -r), (0, 2 * r)),
                              ((r, r), (-2 * r, 0)), ((-r, r), (0, -2 * r))):  # fmt: skip
        tri += _quad((x, 0, z), (dx, 0, dz), (0, h, 0))
    rng = np.random.default_rng(seed)
    for _ in range(10):
        while True:
            cx, cz = rng.uniform(-9, 9, 2)
            if min(abs(cx), abs(cz)) > 2.5:
                break
        s = rng.uniform(0.4, 1.0)
        sides = (((cx - s, cz - s), (2 * s, 0)), ((cx + s, cz - s), (0, 2 * s)))
        sides += (((cx + s, cz + s), (-2 * s, 0)), ((cx - s, cz + s), (0, -2 * s)))
        for (x, z), (dx, dz) in sides:
            tri += _quad((x, 0, z), (dx, 0, dz), (0, h, 0))
    return np.asarray(tri, dtype=np.float32)


def _texture(family: str, seed: int) -> npt.NDArray[np.uint8]:
    from tests.perception.scene_families import panorama

    pano = panorama(family, seed)
    return np.ascontiguousarray(
        cv2.resize(pano[:, :1024], (512, 512), interpolation=cv2.INTER_AREA)
    )


class GLWorld:
    """``step(key) -> RGB frame``; ``truth`` holds the true (x, z, heading) of every frame."""

    def __init__(self, config: GLConfig | None = None) -> None:
        import moderngl

        self.config = config or GLConfig()
        self.fps = FPS
        self.width, self.height = W, H
        self.ctx = moderngl.create_context(standalone=True, backend="egl")
        self.ctx.enable(moderngl.DEPTH_TEST)
        prog = self.ctx.program(vertex_shader=_VS, fragment_shader=_FS)
        vbo = self.ctx.buffer(_scene(self.config.seed).tobytes())
        self.vao = self.ctx.vertex_array(prog, [(vbo, "3f 2f", "pos", "uv")])
        img = _texture(self.config.family, self.config.seed)
        self.tex = self.ctx.texture((img.shape[1], img.shape[0]), 3, img.tobytes())
        self.tex.build_mipmaps()
        self.tex.filter = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
        self.tex.anisotropy = 8.0
        self.prog = prog
        self.fbo = self.ctx.simple_framebuffer((W, H))
        self.x = self.z = self.heading = 0.0
        self.frame = 0
        self.history: list[str] = []
        self.truth: list[tuple[float, float, float]] = []

    def _obeyed(self, key: str) -> str:
        c = self.config
        self.history.append(key)
        lag = round(c.delay_s * FPS)
        k = self.history[-1 - lag] if len(self.history) > lag else "-"
        if c.reversed:
            k = OPPOSITE[k]
        t = self.frame / FPS
        if c.stall_period_s and (t % c.stall_period_s) >= c.stall_period_s - c.stall_s:
            k = "-"
        return "-" if c.still else k

    def step(self, key: str) -> npt.NDArray[np.uint8]:
        c = self.config
        if c.jump_at_switch and len(self.history) and self.history[-1] != key:
            self.x, self.z = -self.z * 0.5 + 1.0, self.x * 0.5 - 1.0
            self.heading += 2.0
        k = self._obeyed(key)
        fwd, right, yaw = KEY_MOTION[k]
        yaw_rps = math.radians(c.yaw_rate_deg) * yaw
        if right and c.leak_yaw_on_strafe:
            yaw_rps += math.radians(c.yaw_rate_deg) * c.leak_yaw_on_strafe * right
        dt = 1.0 / FPS
        mid = self.heading + 0.5 * yaw_rps * dt
        self.x += (
            fwd * c.forward_speed * math.sin(mid) + right * c.strafe_speed * math.cos(mid)
        ) * dt
        self.z += (
            fwd * c.forward_speed * math.cos(mid) - right * c.strafe_speed * math.sin(mid)
        ) * dt
        self.heading += yaw_rps * dt
        self.frame += 1
        self.truth.append((self.x, self.z, self.heading))
        return self.render()

    def render(self) -> npt.NDArray[np.uint8]:
        f = 1.0 / math.tan(math.radians(FOV_DEG) / 2.0)
        near, far, aspect = 0.05, 100.0, W / H
        proj = np.array([[f, 0, 0, 0], [0, f * aspect, 0, 0],
                         [0, 0, -(far + near) / (far - near), -2 * far * near / (far - near)],
                         [0, 0, -1, 0]])  # fmt: skip
        c, s = math.cos(self.heading), math.sin(self.heading)
        # camera: forward (s, 0, c) in x-z (heading grows turning right toward +x), eye 1.5 m
        right, up, back = np.array([c, 0, -s]), np.array([0, 1.0, 0]), -np.array([s, 0, c])
        eye = np.array([self.x, 1.5, self.z])
        view = np.eye(4)
        view[0, :3], view[1, :3], view[2, :3] = right, up, back
        view[:3, 3] = -view[:3, :3] @ eye
        self.prog["mvp"].write((proj @ view).T.astype("f4").tobytes())
        self.fbo.use()
        self.fbo.clear(0.5, 0.6, 0.7, 1.0, depth=1.0)
        self.tex.use()
        self.vao.render()
        raw = np.frombuffer(self.fbo.read(components=3), dtype=np.uint8).reshape(H, W, 3)
        img = np.ascontiguousarray(raw[::-1])
        if self.config.blur_sigma:
            img = cv2.GaussianBlur(img, (0, 0), self.config.blur_sigma)
        return img
