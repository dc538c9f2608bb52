"""A real mosquitto broker on loopback per test module (Debian's mosquitto does not start by
itself; we start it with our own config and stop it by its PID)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Broker:
    port: int
    conf: Path
    process: subprocess.Popen[bytes] | None = None

    def url(self, session: str) -> str:
        return f"mqtt://127.0.0.1:{self.port}/{session}"

    def start(self) -> None:
        exe = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        self.process = subprocess.Popen(
            [exe, "-c", str(self.conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError(f"mosquitto did not listen on 127.0.0.1:{self.port}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process = None


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    if not (shutil.which("mosquitto") or Path("/usr/sbin/mosquitto").exists()):
        if os.environ.get("STREAMEVAL_REQUIRE_BROKER"):
            pytest.fail("mosquitto is not installed (apt-get install -y mosquitto)")
        pytest.skip("mosquitto is not installed (.ci/run installs it)")
    port = free_port()
    conf = tmp_path / "mosquitto.conf"
    conf.write_text(
        f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
        "message_size_limit 0\nmax_queued_messages 4096\n"
    )
    b = Broker(port, conf)
    b.start()
    try:
        yield b
    finally:
        b.stop()
