"""Run WorldFoundry Studio's own realtime server with only its model swapped for
``StandInWorld`` (tools/field/README.md says how to fetch their code).

The swap is at the one point where the Studio turns a catalog entry into a pipeline class
(``StudioManager.import_pipeline_class``): everything after it is theirs — the pipeline cache
and ``run_realtime`` dispatch (``configure_realtime`` / ``stream_realtime`` /
``reset_realtime``, "realtime stream has not been configured" without an image), the
resident runtime, the WebSocket session, ``RealtimeControlResampler``, the JPEG encoding,
the frame queue and its pacing, the upload route. The stand-in follows the interface their
resident adapters implement (``worldfoundry.core.realtime.InteractiveWorldPipeline``) and
reports Matrix-Game 3.0's cadence by default: 17 fps, a first chunk of 57 frames, then 40.

Usage (their source tree on PYTHONPATH or --src):
    python worldfoundry_standin.py --src /tmp/field/wf --port 7871 [--model matrix-game-3]
Environment: STANDIN_FPS, STANDIN_FIRST, STANDIN_CHUNK (cadence), STANDIN_GEN (generation
time of a chunk as a share of its playing time, default 0.8: a model a little faster than
real time), STANDIN_SIZE (WIDTHxHEIGHT, default 320x192).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from standin_world import StandInWorld

# WorldFoundry's key letters (their SUPPORTED_CONTROL_KEYS) → (forward, right, yaw, pitch)
KEY_MOTION = {
    "w": (1, 0, 0, 0), "s": (-1, 0, 0, 0), "a": (0, -1, 0, 0), "d": (0, 1, 0, 0),
    "j": (0, 0, -1, 0), "l": (0, 0, 1, 0), "i": (0, 0, 0, 1), "k": (0, 0, 0, -1),
}  # fmt: skip
# the tokens of their interactions list, used when a chunk comes without segments
TOKEN_KEY = {
    "forward": "w", "backward": "s", "back": "s", "left": "a", "right": "d",
    "camera_l": "j", "camera_r": "l", "camera_up": "i", "camera_down": "k",
}  # fmt: skip


class StandInPipeline:
    """A resident 'model' with the realtime methods the Studio looks for."""

    def __init__(self) -> None:
        width, height = (int(v) for v in os.getenv("STANDIN_SIZE", "320x192").split("x"))
        self.fps = int(os.getenv("STANDIN_FPS", "17"))
        self.first = int(os.getenv("STANDIN_FIRST", "57"))
        self.chunk = int(os.getenv("STANDIN_CHUNK", "40"))
        self.gen_share = float(os.getenv("STANDIN_GEN", "0.8"))
        self.world = StandInWorld(width, height, fps=self.fps)
        self.chunks = 0
        self.configured = False

    @classmethod
    def from_pretrained(cls, **_: Any) -> StandInPipeline:
        return cls()

    def _spec(self) -> dict[str, Any]:
        return {"realtime_spec": {"fps": self.fps, "first_chunk_frames": self.first,
                                  "steady_chunk_frames": self.chunk}}  # fmt: skip

    def prepare_realtime(self) -> dict[str, Any]:
        return self._spec()

    def configure_realtime(self, images: Any, prompt: str = "", **_: Any) -> dict[str, Any]:
        self.world.reset(np.asarray(images.convert("RGB")))
        self.chunks = 0
        self.configured = True
        return self._spec()

    def _frame_keys(self, n: int, interactions: list[str], segments: Any) -> list[list[str]]:
        """The keys held at each frame's midpoint of the chunk's control timeline."""
        spans = [(max(float(s.get("duration") or 0.0), 0.0), list(s.get("keys") or ()))
                 for s in segments or ()]  # fmt: skip
        total = sum(d for d, _ in spans)
        if total <= 0:
            return [[TOKEN_KEY[t] for t in interactions if t in TOKEN_KEY]] * n
        out, k, end = [], 0, spans[0][0]
        for i in range(n):
            at = (i + 0.5) * total / n
            while k + 1 < len(spans) and at > end:
                k += 1
                end += spans[k][0]
            out.append(spans[k][1])
        return out

    def stream_realtime(
        self,
        prompt: str | None = None,
        interactions: list[str] | None = None,
        realtime_segments: Any = None,
        **_: Any,
    ) -> dict[str, Any]:
        if not self.configured:
            raise RuntimeError("stand-in: configure_realtime was never called")
        n = self.first if self.chunks == 0 else self.chunk
        started = time.perf_counter()
        frames = []
        for keys in self._frame_keys(n, list(interactions or ()), realtime_segments):
            motion = np.zeros(4)
            for key in keys:
                motion += KEY_MOTION.get(key, (0, 0, 0, 0))
            frames.append(self.world.step(*np.clip(motion, -1, 1)))
        self.chunks += 1
        spent = time.perf_counter() - started
        time.sleep(max(0.0, self.gen_share * n / self.fps - spent))
        return {"video": np.stack(frames), **self._spec(),
                "realtime_metrics": {"model_ms": 1000 * spent}}  # fmt: skip

    def reset_realtime(self) -> None:
        self.chunks = 0
        self.configured = False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", default="/tmp/field/wf", help="their source tree")
    parser.add_argument("--port", type=int, default=7871)
    parser.add_argument("--model", default="matrix-game-3", help="the catalog entry to serve")
    args = parser.parse_args()
    sys.path.insert(0, args.src)
    os.environ.setdefault("WORLDFOUNDRY_REALTIME_WEBSOCKET_ONLY", "1")  # no aiortc needed
    os.environ.setdefault("WORLDFOUNDRY_STUDIO_WORKSPACE_DIR", "/tmp/field/wf-workspace")
    from worldfoundry.studio import execution, native_app

    execution.StudioManager.import_pipeline_class = lambda self, entry: StandInPipeline  # type: ignore[method-assign]
    native_app.main([args.model, "--frontend", "world", "--host", "127.0.0.1",
                     "--port", str(args.port), "--device", "cpu"])  # fmt: skip


if __name__ == "__main__":
    main()
