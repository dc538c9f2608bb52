"""``streameval dashboard --serve`` opened in headless Chromium, read back over the DevTools
protocol.

textual-serve's page runs the App behind a web terminal (xterm.js drawing on a canvas), so the
App's text is not in the DOM. What the page shows is what its websocket received: the test
starts the server, opens the page in Chromium with remote debugging, and collects every
websocket frame the page received (``Network.webSocketFrameReceived``) — the App's terminal
output, read as plain text once its escape sequences are stripped. The DOM is checked for the
terminal the page mounted. The browser is driven by the browser transport's own DevTools client
(``streameval.transports.browser.cdp``, on aiohttp: its docstring says why not Playwright).
"""

from __future__ import annotations

import asyncio
import base64
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from streameval.transports.browser.cdp import Browser, CdpSession, launch, stop_process

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_browser = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium not installed (.ci/run installs it from Debian)"
)
try:
    import textual_serve  # noqa: F401

    HAS_TEXTUAL_SERVE = True
except ImportError:
    HAS_TEXTUAL_SERVE = False
needs_textual_serve = pytest.mark.skipif(
    not HAS_TEXTUAL_SERVE, reason="textual-serve not installed (pip install 'streameval[web]')"
)
ROOT = Path(__file__).resolve().parents[2]
_ESCAPES = re.compile(
    r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]"  # CSI: cursor moves, colours, modes
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: title, links
    r"|\x1b[=>()][0-9A-Za-z]?"  # keypad and charset switches
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def plain(terminal_output: str) -> str:
    """Terminal output without its escape sequences: the text the screen shows, in the order
    it was drawn."""
    return _ESCAPES.sub("", terminal_output)


@dataclass
class ServedPage:
    """The dashboard page opened in Chromium: what its websocket received so far."""

    cdp: CdpSession
    received: list[str] = field(default_factory=list)
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.cdp.on("Network.webSocketFrameReceived", self._frame)

    @property
    def text(self) -> str:
        return plain("".join(self.received))

    async def wait_for(self, needles: Sequence[str], timeout: float = 30.0) -> str:
        """Read the page's websocket frames until every one of ``needles`` was shown."""
        deadline = time.monotonic() + timeout
        while not all(n in self.text for n in needles):
            left = deadline - time.monotonic()
            if left <= 0:
                missing = [n for n in needles if n not in self.text]
                raise AssertionError(f"{missing!r} not shown in:\n{self.text[-4000:]}")
            self._arrived.clear()
            with suppress(TimeoutError):
                await asyncio.wait_for(self._arrived.wait(), min(left, 1.0))
        return self.text

    async def evaluate(self, expression: str) -> Any:
        """A JavaScript expression's value in the page."""
        return await self.cdp.evaluate(expression)

    async def press(self, key: str) -> None:
        """Type one character into the web terminal (its input field focused first)."""
        await self.evaluate("document.querySelector('.xterm-helper-textarea').focus()")
        await self.cdp.call("Input.dispatchKeyEvent", {"type": "keyDown", "key": key, "text": key})
        await self.cdp.call("Input.dispatchKeyEvent", {"type": "keyUp", "key": key})

    def _frame(self, params: dict[str, Any]) -> None:
        response = params["response"]
        data = response["payloadData"]
        raw = base64.b64decode(data) if response["opcode"] == 2 else data.encode()
        self.received.append(raw.decode("utf-8", "replace"))
        self._arrived.set()


async def _wait_http(
    http: aiohttp.ClientSession, url: str, server: subprocess.Popen[bytes]
) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            out = server.stdout.read().decode() if server.stdout else ""
            raise AssertionError(f"dashboard --serve exited {server.returncode}:\n{out}")
        with suppress(aiohttp.ClientError):
            async with http.get(url) as response:
                if response.status == 200:
                    return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{url} did not answer")


@asynccontextmanager
async def served_page(dashboard_args: Sequence[str], profile: Path) -> AsyncIterator[ServedPage]:
    """``streameval dashboard ARGS --serve 127.0.0.1:PORT``, opened in headless Chromium
    (started as the browser transport starts it: ``streameval.transports.browser.cdp``, one
    DevTools client for both; ``profile`` is unused, the browser makes its own)."""
    if CHROMIUM is None:
        pytest.skip("chromium not installed")
    port = free_port()
    command = [sys.executable, "-m", "streameval", "dashboard", *dashboard_args]
    server = subprocess.Popen(
        [*command, "--serve", f"127.0.0.1:{port}"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    browser: Browser | None = None
    try:
        url = f"http://127.0.0.1:{port}/"
        async with aiohttp.ClientSession() as http:
            await _wait_http(http, url, server)
        browser = await launch((1600, 1000))
        cdp = await browser.open_page((await browser.targets())[0])
        try:
            page = ServedPage(cdp)
            await cdp.call("Network.enable")
            await cdp.call("Page.navigate", {"url": url})
            yield page
        finally:
            await cdp.close()
    finally:
        if browser is not None:
            await browser.close()
        stop_process(server)
