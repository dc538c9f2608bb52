"""Run Overworld's own world-engine server (Overworldai/world_engine:
``examples/websocket_server.py``) with only its model, the ``WorldEngine`` of their package,
swapped for ``StandInWorld`` (tools/field/README.md says how to fetch their code).

How the swap is made, without touching their code: their server imports ``WorldEngine`` and
``CtrlInput`` from the package ``world_engine`` when its app starts (``load_engine``); this
launcher puts a module of that name first on the import path whose ``WorldEngine`` keeps the
engine's calls (``reset()``, ``append_frame(frame)``, ``set_prompt(text)``,
``gen_frame(ctrl=CtrlInput(button=set_of_keycodes, mouse=(dx, dy)))`` → an H×W×3 uint8
tensor) and answers them with the stand-in room: W/S (87/83) move, A/D (65/68) strafe, the
mouse turns (``mouse_dx`` of ``COUNTS_PER_FULL_TURN`` a frame is the stand-in's full 30°/s,
``mouse_dy`` pitches). Everything else is theirs: the FastAPI app and its ``/ws`` endpoint, the
status messages, the seed frame sent first, the one-frame-per-control loop that drains queued
controls and keeps the newest, ``reset`` / ``prompt`` / ``pause`` / ``resume``, the JPEG
encoding, ``BUTTON_CODES``.

Three settings of their module are set, as a user without their GPU and network would:
``DEVICE = "cpu"``, ``SEED_URL`` the start image's ``file://`` URL (their server downloads its
seed from the internet, which this machine cannot reach), and ``torchvision.io.read_image``
(the only torchvision call, reading that seed) answered with Pillow: a CPU torchvision wheel
matching torch is not on this machine. Those are the only stubs.

Usage (with a venv holding fastapi, uvicorn, pillow, numpy and torch):
    python overworld_standin.py --src /tmp/field/ow --port 8080
Then ``ws://127.0.0.1:8080/ws`` with ``--profile overworld`` (their engine's own socket: no
router, no claim). Environment: STANDIN_IMAGE (the seed), STANDIN_SIZE (default 640x360),
STANDIN_FPS (the stand-in's time step, default 20), STANDIN_INVERT=1 (mouse inverted).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from standin_world import StandInWorld  # noqa: E402

COUNTS_PER_FULL_TURN = 8.0
"""Mouse counts a frame that turn the stand-in at its full 30°/s (the built-in profile sends 8)."""
KEY_W, KEY_S, KEY_A, KEY_D = 87, 83, 65, 68


def _size() -> tuple[int, int]:
    w, h = os.environ.get("STANDIN_SIZE", "640x360").split("x")
    return int(w), int(h)


def _world_engine_module() -> types.ModuleType:
    """``world_engine`` as their server imports it, answered by the stand-in."""
    import torch

    @dataclasses.dataclass
    class CtrlInput:
        button: set[int] = dataclasses.field(default_factory=set)
        mouse: tuple[float, float] = (0.0, 0.0)

    class WorldEngine:
        def __init__(self, model_uri: str, **kwargs: Any) -> None:
            width, height = _size()
            self.world = StandInWorld(width, height, float(os.environ.get("STANDIN_FPS", "20")))
            self.sign = -1.0 if os.environ.get("STANDIN_INVERT") == "1" else 1.0
            self.seed: np.ndarray | None = None
            self.prompt = ""
            self.frames = 0
            print(f"[stand-in] WorldEngine({model_uri!r}) {width}x{height}", flush=True)

        def reset(self) -> None:
            self.seed = None
            self.world.reset(None)

        def append_frame(self, frame: Any) -> None:
            self.seed = np.asarray(frame.cpu().numpy(), dtype=np.uint8)
            self.world.reset(self.seed)

        def set_prompt(self, prompt: str) -> None:
            self.prompt = prompt

        def gen_frame(self, ctrl: CtrlInput) -> Any:
            keys = ctrl.button
            forward = (KEY_W in keys) - (KEY_S in keys)
            right = (KEY_D in keys) - (KEY_A in keys)
            dx, dy = ctrl.mouse
            yaw = float(np.clip(self.sign * dx / COUNTS_PER_FULL_TURN, -1.0, 1.0))
            pitch = float(np.clip(-self.sign * dy / COUNTS_PER_FULL_TURN, -1.0, 1.0))
            image = self.world.step(float(forward), float(right), yaw, pitch)
            self.frames += 1
            return torch.from_numpy(np.ascontiguousarray(image))

    module = types.ModuleType("world_engine")
    module.WorldEngine = WorldEngine  # type: ignore[attr-defined]
    module.CtrlInput = CtrlInput  # type: ignore[attr-defined]
    return module


def _torchvision_module() -> types.ModuleType:
    """``torchvision.io.read_image`` (their seed loader's only torchvision call), by Pillow."""
    import torch
    from PIL import Image

    def read_image(path: str) -> Any:
        rgb = np.asarray(Image.open(path).convert("RGB"), dtype=np.uint8)
        return torch.from_numpy(rgb.copy()).permute(2, 0, 1).contiguous()

    tv = types.ModuleType("torchvision")
    io = types.ModuleType("torchvision.io")
    io.read_image = read_image  # type: ignore[attr-defined]
    tv.io = io  # type: ignore[attr-defined]
    return tv


def _seed_file() -> Path:
    image = os.environ.get("STANDIN_IMAGE")
    if image:
        return Path(image).resolve()
    from PIL import Image

    path = Path("/tmp/field/ow-seed.png")
    width, height = _size()
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(StandInWorld(width, height).reset(None)).save(path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, required=True, help="their tree (examples/ in it)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args()

    sys.modules["world_engine"] = _world_engine_module()
    sys.modules["torchvision"] = tv = _torchvision_module()
    sys.modules["torchvision.io"] = tv.io  # type: ignore[attr-defined]
    server_py = args.src / "examples" / "websocket_server.py"
    spec = importlib.util.spec_from_file_location("websocket_server", server_py)
    assert spec is not None and spec.loader is not None
    server = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(server)
    server.DEVICE = "cpu"
    server.SEED_URL = _seed_file().as_uri()

    import uvicorn

    uvicorn.run(server.app, host=args.host, port=args.port, ws_ping_interval=300)


if __name__ == "__main__":
    main()
