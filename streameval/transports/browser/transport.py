"""``attach browser+https://HOST/PATH``: a world model that only exists as a web page, scored
live through headless Chromium (``cdp.py``: why a DevTools client of our own, not Playwright).

The page is opened in a Chromium we start (``$STREAMEVAL_CHROMIUM`` or the first on PATH), or
found among the tabs of one the user started with ``--remote-debugging-port`` (``browser+http://
127.0.0.1:9222 --page TEXT``: log in first, we attach; that browser is left running). The
profile's ``[browser]`` table (``profiles/browser.py``; the built-in ``web-wasd`` when none
is given) says which element is the world and when it has started; a page that never shows
its start is one line, exit 2.

Frames: ``screencast`` (default) asks the compositor for every frame it draws
(``Page.startScreencast``, acked one by one: every frame the page draws, the world's or
another part's), cropped to the element, with the compositor's timestamp; ``screenshot``
captures the element's box again and again (``Page.captureScreenshot``), timed at the
capture's midpoint, where a picture equal to the last one is no frame (a screencast frame
always is: the page drew). Both are JPEG (``quality``), so the frames are a browser capture
of the page, not the model's own pixels: the episode's interactivity says ``capture``
(``browser-screencast``/``browser-screenshot``).

Keys are real input events: ``Input.dispatchKeyEvent`` keyDown/keyUp with the key's ``key``,
``code`` and ``windowsVirtualKeyCode`` (``page.py``), repeating while held as a keyboard does
(``key_repeat``); a key the profile's ``[keys.mouse]`` turns into mouse motion moves the
pointer by its ``dx``/``dy`` once per frame interval while held, starting at the element's
centre, anywhere in the viewport (a page that follows the mouse listens on its document);
past the viewport's edge it starts again at the centre, and that jump is a motion the page
sees too (at 8 a frame, 16 fps, a 1280-wide viewport and a 640-wide element: after 5 s one
way).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from streameval.constants import DEFAULT_FPS
from streameval.core.tasks import cancel_and_wait
from streameval.errors import BadInputError, CdpError
from streameval.protocol.wire import MAX_FRAME_SIDE, Frame
from streameval.transports.base import LiveSource
from streameval.transports.browser.cdp import (
    Browser,
    CdpSession,
    connect,
    devtools_endpoint,
    launch,
    pick_page,
)
from streameval.transports.browser.page import (
    Box,
    describe_start,
    element_expression,
    key_event,
    start_expression,
)
from streameval.transports.live_config import ServerInfo, SourceRequest
from streameval.transports.profiles.browser import BrowserSpec

if TYPE_CHECKING:
    from streameval.transports.profiles import ServerProfile

WINDOW = (1280, 800)
"""The headless window: a 1280×720 world fits whole."""
START_POLL_S = 0.1
REPEAT_DELAY_S = 0.5
REPEAT_EVERY_S = 1 / 30
MAX_SCREENSHOTS_PER_S = 60.0
"""``screenshot`` capture asks no faster than this (a page that draws faster loses frames)."""
LOAD_MARGIN_S = 30.0
"""Starting Chromium and loading the page, on top of the start condition's own time-out."""


class BrowserSource(LiveSource):
    scheme = "browser"

    def __init__(
        self,
        request: SourceRequest,
        *,
        profile: ServerProfile,
        key_names: dict[str, str],
        page: str | None = None,
    ) -> None:
        super().__init__(request)
        url = request.url
        self.profile = profile
        self.spec = profile.browser or BrowserSpec()
        self.key_names = key_names
        self.page_cli = page
        self.page_text = page or self.spec.page
        self.target_url = url.removeprefix("browser+")
        self.browser: Browser | None = None
        self.cdp: CdpSession | None = None
        self.box: Box | None = None
        self.attached = False  # a browser the user started: not navigated, not stopped
        self._n = 0
        self._last: np.ndarray | None = None
        self._first_frame = asyncio.Event()
        self._held_tasks: list[asyncio.Task[None]] = []
        self._acks: set[asyncio.Task[None]] = set()
        self._down: str | None = None  # the browser key held now
        self._pointer: tuple[float, float] = (0.0, 0.0)
        self._fps = float(request.fps or profile.fps or DEFAULT_FPS)
        self.capture_counts = {"captured": 0, "unchanged": 0, "undecodable": 0}

    @property
    def capture(self) -> str:
        return f"browser-{self.spec.capture}"

    # ------------------------------------------------------------ opening

    async def open_transport(self) -> ServerInfo:
        endpoint = await devtools_endpoint(self.target_url)
        if self.page_cli and endpoint is None:
            raise BadInputError(
                self.url,
                "--page picks a tab of a Chromium you started: this URL is not its DevTools "
                "port (start it with --remote-debugging-port=9222, attach browser+http://"
                "127.0.0.1:9222)",
            )
        if endpoint is not None:
            self.attached = True
            self.browser = await connect(endpoint)
            targets = await self._targets()
            target = pick_page(targets, self.page_text, self.url)
        else:
            self.browser = await launch(WINDOW)
            opened = await self._targets()
            if not opened:
                raise BadInputError(self.url, "Chromium opened no page")
            target = opened[0]
        self.cdp = cdp = await self.browser.open_page(target)
        await cdp.call("Page.enable")
        # a tab in the background is throttled (a user's browser, headed): ours is in front
        await cdp.call("Page.bringToFront")
        await cdp.call("Emulation.setFocusEmulationEnabled", {"enabled": True})
        if not self.attached:
            await self._navigate(cdp)
        await self._wait_start(cdp)
        self.box = await self._element(cdp)
        await self._start_capture(cdp)
        await self._wait_first_frame()
        # the pointer at the element's centre before any key: mouse turns start from there
        self._pointer = (cx, cy) = self.box.centre
        await cdp.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": cx, "y": cy})
        own = self.profile.fps
        self.fps_origin = "asked" if self.fps_hint else "profile" if own else "default"
        host = self.target_url.split("/")[2] if "//" in self.target_url else self.target_url
        assert self._last is not None
        height, width = self._last.shape[:2]
        return ServerInfo(host, self._fps, width, height)

    async def _targets(self) -> list[dict[str, Any]]:
        assert self.browser is not None
        try:
            return await self.browser.targets()
        except Exception as exc:
            raise BadInputError(
                self.url, f"Chromium's DevTools did not list its tabs: {exc}"
            ) from None

    async def _navigate(self, cdp: CdpSession) -> None:
        answer = await cdp.call("Page.navigate", {"url": self.target_url})
        if answer.get("errorText"):
            raise BadInputError(self.url, f"the page did not load: {answer['errorText']}")

    async def _wait_start(self, cdp: CdpSession) -> None:
        """The profile's selector and/or text present, within ``start_timeout_s``."""
        spec = self.spec
        deadline = time.perf_counter() + spec.start_timeout_s
        expression = start_expression(spec.start_selector, spec.start_text)
        while True:
            with contextlib.suppress(CdpError):  # a page still navigating has no context
                if await cdp.evaluate(expression, timeout=5.0) and await cdp.evaluate(
                    element_expression(spec.element), timeout=5.0
                ):
                    return
            if time.perf_counter() > deadline:
                break
            await asyncio.sleep(START_POLL_S)
        what = describe_start(spec.start_selector, spec.start_text)
        if await _quiet_evaluate(cdp, expression):
            what = self._no_element()
        raise BadInputError(
            self.url, f"the page never showed its start in {spec.start_timeout_s:g} s: {what}"
        )

    def _no_element(self) -> str:
        if self.spec.element is not None:
            return f"no element matches [browser] element = {self.spec.element!r}"
        return "no canvas or video element (name it: [browser] element = 'CSS selector')"

    async def _element(self, cdp: CdpSession) -> Box:
        found = await cdp.evaluate(element_expression(self.spec.element))
        if not found:
            raise BadInputError(self.url, self._no_element())
        box = Box.of(found)
        if box.width < 2 or box.height < 2:
            raise BadInputError(self.url, f"the world's <{box.tag}> is {box.width}x{box.height}")
        return box

    async def _start_capture(self, cdp: CdpSession) -> None:
        if self.spec.capture == "screencast":
            cdp.on("Page.screencastFrame", self._on_screencast)
            await cdp.call(
                "Page.startScreencast",
                {"format": "jpeg", "quality": self.spec.quality, "everyNthFrame": 1},
            )
        else:
            self._tasks.append(asyncio.create_task(self._screenshots(cdp)))

    async def _wait_first_frame(self) -> None:
        try:
            async with asyncio.timeout(self.spec.start_timeout_s):
                await self._first_frame.wait()
        except TimeoutError:
            raise BadInputError(
                self.url,
                f"the page never showed its start in {self.spec.start_timeout_s:g} s: "
                f"its <{self.box.tag if self.box else '?'}> drew no frame",
            ) from None

    # ------------------------------------------------------------ frames

    def _on_screencast(self, params: dict[str, Any]) -> None:
        now = time.perf_counter()
        assert self.cdp is not None
        ack = asyncio.create_task(self._ack(params.get("sessionId", 0)))
        self._acks.add(ack)  # held until done: a task nobody holds may be collected
        ack.add_done_callback(self._acks.discard)
        meta = params.get("metadata", {})
        stamp = meta.get("timestamp")
        # the compositor's time of the frame, on our clock (never after its arrival)
        t_frame = now - max(0.0, time.time() - stamp) if isinstance(stamp, int | float) else now
        image = self._decode(params.get("data", ""))
        if image is None or self.box is None:
            return
        x0, y0, x1, y1 = self.box.crop(
            image.shape[1], float(meta.get("deviceWidth") or image.shape[1]),
            float(meta.get("offsetTop") or 0.0),
        )  # fmt: skip
        self._offer(np.ascontiguousarray(image[max(0, y0) : y1, max(0, x0) : x1]), t_frame)

    async def _ack(self, session_id: int) -> None:
        assert self.cdp is not None
        with contextlib.suppress(CdpError):
            await self.cdp.call("Page.screencastFrameAck", {"sessionId": session_id})

    async def _screenshots(self, cdp: CdpSession) -> None:
        assert self.box is not None
        box = self.box
        clip = {"x": box.x, "y": box.y, "width": box.width, "height": box.height, "scale": 1}
        params = {
            "format": "jpeg",
            "quality": self.spec.quality,
            "clip": clip,
            "optimizeForSpeed": True,
        }
        try:
            while not self._ended:
                t0 = time.perf_counter()
                answer = await cdp.call("Page.captureScreenshot", params)
                t1 = time.perf_counter()
                image = self._decode(answer.get("data", ""))
                if image is not None:
                    self._offer(image, (t0 + t1) / 2)
                await asyncio.sleep(max(0.0, 1 / MAX_SCREENSHOTS_PER_S - (t1 - t0)))
        except CdpError as exc:
            self.lost(str(exc))

    def _decode(self, data: str) -> np.ndarray | None:
        import cv2

        self.capture_counts["captured"] += 1
        raw = np.frombuffer(base64.b64decode(data), np.uint8) if data else None
        bgr = cv2.imdecode(raw, cv2.IMREAD_COLOR) if raw is not None and raw.size else None
        if bgr is None or max(bgr.shape[:2]) > MAX_FRAME_SIDE:
            self.capture_counts["undecodable"] += 1
            self.reject(f"a captured frame of {len(data)} base64 bytes does not decode")
            return None
        return np.asarray(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), dtype=np.uint8)

    def _offer(self, image: np.ndarray, t_frame: float) -> None:
        """A captured picture of the element. A screencast frame is a frame the page drew
        (a frozen world that draws the same picture again is streaming frozen frames, and
        is scored so); a screenshot equal to the last one is no frame (polling cannot tell
        a new frame of the same picture from none). ``unchanged`` counts both."""
        if image.size == 0:
            return
        last = self._last
        if last is not None and last.shape == image.shape and np.array_equal(last, image):
            self.capture_counts["unchanged"] += 1
            if self.spec.capture == "screenshot":
                return
        self._last = image
        self._first_frame.set()
        self.deliver(Frame(index=self._n, key=None, image=image), t_frame)
        self._n += 1

    # ------------------------------------------------------------ keys

    async def connect(self) -> None:
        await super().connect()
        if self.info is not None:
            self.info.extra["interactivity"].update(
                {"capture": self.capture, "capture_counts": self.capture_counts}
            )

    async def send_step(self, index: int, key: str) -> None:
        raise NotImplementedError("a web page plays at its own rate (stream mode)")

    async def send_key(
        self, kind: Literal["keydown", "keyup", "heartbeat"], key: str | None
    ) -> None:
        if kind == "heartbeat" or key is None or self.cdp is None:
            return
        if kind == "keyup":
            await cancel_and_wait(self._held_tasks)
            self._held_tasks = []
        name = self.key_names.get(key, key)
        if self.profile.keys.is_button(key):
            await self.cdp.call("Input.dispatchKeyEvent", key_event(name, kind))
            self._down = name if kind == "keydown" else None
            if kind == "keydown" and self.spec.key_repeat:
                self._held_tasks.append(asyncio.create_task(self._repeat(name)))
        dx, dy = self.profile.keys.motion(key)
        if kind == "keydown" and (dx or dy):
            self._held_tasks.append(asyncio.create_task(self._move(dx, dy)))

    async def _repeat(self, name: str) -> None:
        """A held key repeats as a keyboard's does."""
        assert self.cdp is not None
        await asyncio.sleep(REPEAT_DELAY_S)
        while True:
            with contextlib.suppress(CdpError):
                await self.cdp.call("Input.dispatchKeyEvent", key_event(name, "keydown", True))
            await asyncio.sleep(REPEAT_EVERY_S)

    async def _move(self, dx: float, dy: float) -> None:
        """The pointer moved by (dx, dy) every frame interval while the key is held."""
        assert self.cdp is not None and self.box is not None
        box = self.box
        every = 1.0 / (self.info.fps if self.info is not None else self._fps)
        while True:
            self._pointer = x, y = box.pointer_step(self._pointer, dx, dy)
            with contextlib.suppress(CdpError):
                await self.cdp.call(
                    "Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y}
                )
            await asyncio.sleep(every)

    # ------------------------------------------------------------ closing

    async def close_transport(self) -> None:
        await cancel_and_wait([*self._held_tasks, *self._acks])
        if self.cdp is not None:
            if self.attached:  # the user's browser: leave its page as it was, keys up
                with contextlib.suppress(Exception):
                    if self._down is not None:  # an episode cut short with a key held
                        up = key_event(self._down, "keyup")
                        await self.cdp.call("Input.dispatchKeyEvent", up, timeout=3.0)
                    await self.cdp.call("Page.stopScreencast", timeout=3.0)
            await self.cdp.close()
        if self.browser is not None:
            await self.browser.close()


async def _quiet_evaluate(cdp: CdpSession, expression: str) -> Any:
    with contextlib.suppress(CdpError):
        return await cdp.evaluate(expression, timeout=5.0)
    return None
