"""A small Chrome DevTools Protocol client on aiohttp: find Chromium, start it headless or
reach one already running, and talk to one of its pages.

Why not Playwright for Python (the maintained driver the issue names)? Both were tried here
with Debian's Chromium 156: Playwright 1.65 drives it (``executable_path``, and
``context.new_cdp_session`` for the screencast), but its wheel is 54 MB (167 MB installed: a
Node.js runtime and its driver), it adds greenlet and pyee, and every session starts a Node
process between us and the browser (4 s to a first answer here). What the browser door needs
is eight DevTools methods (``Page.navigate``, ``Runtime.evaluate``, ``Page.startScreencast``
and its acks, ``Page.captureScreenshot``, ``Input.dispatchKeyEvent``,
``Input.dispatchMouseEvent``, ``Emulation.setFocusEmulationEnabled``) over one WebSocket, which
aiohttp (already a dependency) speaks; attaching to a browser the user started
(``--remote-debugging-port``) is the same WebSocket. Playwright's strengths (auto-waiting
locators, browser downloads, Firefox/WebKit) are not used: its browser download is not
possible on an offline machine, and the system Chromium is what both would run. One client,
this one, serves the transport and the tests (``tests/tui/browser.py``).

Every failure to find, start or reach the browser is one ``BadInputError`` line with its fix.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from streameval.errors import BadInputError, CdpError

CHROMIUM_ENV = "STREAMEVAL_CHROMIUM"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
INSTALL_FIX = "apt-get install chromium (Debian/Ubuntu), or set STREAMEVAL_CHROMIUM=/path/to/it"
CALL_TIMEOUT_S = 30.0
"""A DevTools call not answered in this long is a browser gone away."""
START_TIMEOUT_S = 30.0
"""Chromium has this long to open its DevTools port."""
HEADLESS_FLAGS = (
    "--headless",
    "--mute-audio",
    "--no-first-run",
    "--no-default-browser-check",
    "--autoplay-policy=no-user-gesture-required",
    # a page's timers and animation frames must not be slowed for being unseen
    "--disable-background-timer-throttling",
    "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows",
    # WebGL worlds on a machine without a GPU: SwiftShader, which Chromium asks for by name
    "--enable-unsafe-swiftshader",
)

EventHandler = Callable[[dict[str, Any]], None]


def find_chromium() -> str:
    """``$STREAMEVAL_CHROMIUM``, else the first Chromium on PATH; one line with the fix if none."""
    given = os.environ.get(CHROMIUM_ENV)
    if given:
        path = shutil.which(given)
        if path is None:
            raise BadInputError(CHROMIUM_ENV, f"{given!r} is not an executable: {INSTALL_FIX}")
        return path
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    raise BadInputError("Chromium", f"not found on PATH (a browser+ URL drives one): {INSTALL_FIX}")


@dataclass
class CdpSession:
    """One DevTools WebSocket (a page's): calls answered by id, events to handlers."""

    ws: aiohttp.ClientWebSocketResponse
    handlers: dict[str, list[EventHandler]] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _waiting: dict[int, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    _reader: asyncio.Task[None] | None = None
    closed_reason: str | None = None

    def start(self) -> None:
        self._reader = asyncio.create_task(self._read())

    def on(self, method: str, handler: EventHandler) -> None:
        self.handlers.setdefault(method, []).append(handler)

    async def call(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = CALL_TIMEOUT_S
    ) -> dict[str, Any]:
        """``method``'s result; ``CdpError`` with the browser's words when it refused."""
        if self.closed_reason is not None:
            raise CdpError(self.closed_reason)
        ask = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[ask] = future
        try:
            await self.ws.send_json({"id": ask, "method": method, "params": params or {}})
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            raise CdpError(f"{method}: no answer from the browser in {timeout:g} s") from None
        finally:
            self._waiting.pop(ask, None)

    async def evaluate(self, expression: str, timeout: float = CALL_TIMEOUT_S) -> Any:
        """A JavaScript expression's value (awaited when it is a promise)."""
        answer = await self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            timeout,
        )
        if "exceptionDetails" in answer:
            details = answer["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise CdpError(f"the page's script failed: {text}")
        return answer.get("result", {}).get("value")

    async def _read(self) -> None:
        reason = "the browser closed the page's DevTools connection"
        try:
            async for message in self.ws:
                if message.type != aiohttp.WSMsgType.TEXT:
                    continue
                data = message.json()
                ask = data.get("id")
                if ask is not None:
                    future = self._waiting.get(ask)
                    if future is not None and not future.done():
                        if "error" in data:
                            words = data["error"].get("message", "error")
                            future.set_exception(CdpError(f"DevTools refused: {words}"))
                        else:
                            future.set_result(data.get("result", {}))
                    continue
                for handler in self.handlers.get(data.get("method", ""), ()):
                    handler(data.get("params", {}))
        except Exception as exc:  # the socket broke: every waiter learns why
            reason = f"the browser's DevTools connection broke: {exc}"
        self.closed_reason = reason
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(CdpError(reason))

    async def close(self) -> None:
        self.closed_reason = self.closed_reason or "closed"
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await self._reader
        with contextlib.suppress(Exception):
            await self.ws.close()


@dataclass
class Browser:
    """A Chromium we reach over DevTools: one we started (``process`` set: stopped on
    ``close``) or one the user started with ``--remote-debugging-port`` (left running)."""

    endpoint: str  # http://HOST:PORT of its DevTools
    http: aiohttp.ClientSession
    process: subprocess.Popen[bytes] | None = None
    profile_dir: tempfile.TemporaryDirectory[str] | None = None

    async def targets(self) -> list[dict[str, Any]]:
        async with self.http.get(f"{self.endpoint}/json/list") as answer:
            found: list[dict[str, Any]] = await answer.json(content_type=None)
        return [t for t in found if t.get("type") == "page"]

    async def open_page(self, target: dict[str, Any]) -> CdpSession:
        ws = await self.http.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0)
        session = CdpSession(ws)
        session.start()
        return session

    async def close(self) -> None:
        if self.process is not None:
            stop_process(self.process)
        if self.profile_dir is not None:
            with contextlib.suppress(OSError):
                self.profile_dir.cleanup()
        await self.http.close()


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 5 s: a browser we started never outlives its session."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


async def launch(window: tuple[int, int] = (1280, 800), extra: Sequence[str] = ()) -> Browser:
    """Headless Chromium on a DevTools port of its choosing, with a profile of its own."""
    executable = find_chromium()
    profile = tempfile.TemporaryDirectory(prefix="streameval-chromium-")
    flags = [
        *HEADLESS_FLAGS,
        f"--user-data-dir={profile.name}",
        "--remote-debugging-port=0",
        f"--window-size={window[0]},{window[1]}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        flags.append("--no-sandbox")  # Chromium refuses root without it (containers, CI)
    process = subprocess.Popen(
        [executable, *flags, *extra, "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a terminal's Ctrl-C reaches us; we stop it
    )
    http = aiohttp.ClientSession()
    try:
        port = await _devtools_port(Path(profile.name), process, executable)
    except BaseException:
        stop_process(process)
        profile.cleanup()
        await http.close()
        raise
    return Browser(f"http://127.0.0.1:{port}", http, process, profile)


async def _devtools_port(profile: Path, process: subprocess.Popen[bytes], exe: str) -> int:
    marker = profile / "DevToolsActivePort"
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BadInputError(exe, f"Chromium exited at start (code {process.returncode})")
        with contextlib.suppress(OSError, ValueError, IndexError):
            text = marker.read_text().strip()
            if text:
                return int(text.split()[0])
        await asyncio.sleep(0.05)
    raise BadInputError(exe, f"Chromium opened no DevTools port in {START_TIMEOUT_S:g} s")


async def devtools_endpoint(http_url: str) -> str | None:
    """``http://HOST:PORT`` when ``http_url`` is a Chromium's DevTools port (its
    ``/json/version`` names a browser), else None (a web page to open)."""
    parts = http_url.split("/")
    base = "/".join(parts[:3])
    if len(parts) > 3 and any(parts[3:]):
        return None  # a page's path: not a DevTools endpoint
    timeout = aiohttp.ClientTimeout(total=3)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as http,
            http.get(f"{base}/json/version") as answer,
        ):
            if answer.status != 200:
                return None
            info = await answer.json(content_type=None)
    except (aiohttp.ClientError, TimeoutError, ValueError):
        return None
    return base if isinstance(info, dict) and "webSocketDebuggerUrl" in info else None


async def connect(endpoint: str) -> Browser:
    """A Chromium the user started with ``--remote-debugging-port`` (left running on close)."""
    return Browser(endpoint, aiohttp.ClientSession())


def pick_page(targets: list[dict[str, Any]], text: str | None, where: str) -> dict[str, Any]:
    """The tab whose title or URL contains ``text`` (case-insensitive); without ``text``, the
    only tab. Several or none is one line listing what is open."""
    if text:
        needle = text.lower()
        found = [
            t for t in targets if needle in (t.get("title", "") + " " + t.get("url", "")).lower()
        ]
    else:
        found = targets
    if len(found) == 1:
        return found[0]
    tabs = "; ".join(f"{t.get('title') or '(untitled)'} <{t.get('url')}>" for t in targets[:8])
    if not found:
        return _refuse(where, f"no tab's title or URL contains {text!r} (open: {tabs or 'none'})")
    hint = "a more precise --page TEXT" if text else "--page TEXT (a word of its title or URL)"
    return _refuse(where, f"{len(found)} tabs match, give {hint} (open: {tabs})")


def _refuse(where: str, message: str) -> dict[str, Any]:
    raise BadInputError(where, message)
