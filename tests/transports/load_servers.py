"""Model servers for the load test, in their own process (the evaluator's process must only
evaluate): ``python -m tests.transports.load_servers BROKER_PORT SESSIONS`` serves a cheap
640×432 panning model on MQTT sessions ``load0..`` and on one WebRTC port, then prints
``ready PORT`` and runs until killed."""

from __future__ import annotations

import asyncio
import sys

import numpy as np

from streameval.transports.mqtt.serve import serve_mqtt
from streameval.transports.webrtc.serve import WebRTCServer

W, H, FPS = 640, 432, 16.0


class Panner:
    """A model that costs almost nothing per step: a texture shifted by the key."""

    fps, width, height = FPS, W, H

    def __init__(self) -> None:
        rng = np.random.default_rng(1)
        self.tex = rng.integers(0, 255, (H, W + 512, 3), dtype=np.uint8)
        self.x = 256

    def reset(self) -> None:
        self.x = 256

    def step(self, key: str) -> np.ndarray:
        self.x += {"A": -4, "D": 4, "L": -4, "R": 4}.get(key, 0)
        self.x %= 512
        return np.ascontiguousarray(self.tex[:, self.x : self.x + W])


async def main(broker_port: int, sessions: int) -> None:
    tasks = [
        asyncio.create_task(
            serve_mqtt(
                Panner(),
                f"mqtt://127.0.0.1:{broker_port}/load{i}",
                name="panner",
                fps=FPS,
                width=W,
                height=H,
            )
        )
        for i in range(sessions)
    ]
    server = WebRTCServer(Panner, name="panner", fps=FPS, width=W, height=H)
    port = await server.start("127.0.0.1", 0)
    await asyncio.sleep(0.5)
    print(f"ready {port}", flush=True)
    await asyncio.gather(*tasks, asyncio.Event().wait())


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
