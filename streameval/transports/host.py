"""The server side of one session: a ``step(key) -> frame`` model answering wire messages.

Shared by ``serve --mqtt`` and ``serve --webrtc``. ``step`` messages render exactly the frame
asked for (video clock: the evaluator decides which key conditions each frame; a step for an
index already rendered is ignored, so a resent request never advances the model twice).
``keydown``/``keyup`` make the host play at the model's own fps with the held key (wall clock,
as a real game server does); without any message for ``idle_timeout_s`` it stops playing.

A benchmark case starts with ``restart(arguments)``: the model's ``reset`` receives the case's
image, caption and intrinsics by the names it accepts (``start_arguments`` reads them from a
client's ``configure`` / ``reset`` message, the built-in ``serve`` profile's). A start the
model cannot take (an image to a ``reset`` without one, an image that does not decode) is
``StartRefused``, one line the client reads as the server's own words.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import math
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from streameval.core.tasks import cancel_and_wait
from streameval.errors import BadInputError, StartRefused, one_line
from streameval.protocol.case_start import START_NAMES, CaseStart
from streameval.protocol.keys import NO_KEY
from streameval.protocol.wire import (
    Bye,
    Frame,
    Heartbeat,
    KeyDown,
    KeyUp,
    Message,
    Reset,
    Step,
)

PublishFrame = Callable[[Frame], Awaitable[None]]
Refuse = Callable[[str, str], Awaitable[None]]
"""Tells the client that ``episode`` cannot go on — its start was refused, or the model
failed a step — in ``words`` (our protocol: a ``bye`` naming the episode)."""
IDLE_TIMEOUT_S = 5.0


def _optional(out: Any, name: str, dtype: type) -> Any:
    value = getattr(out, name, None)
    return None if value is None else np.asarray(value, dtype=dtype)


def wire_frame(index: int, key: str, out: Any, *, t_server: float | None = None) -> Frame:
    """A model's step output (bare array or object with ``image``, optional ``pose``,
    ``depth``, ``intrinsics``) as a wire frame."""
    image = out if isinstance(out, np.ndarray) else out.image
    return Frame(
        index=index,
        key=key,
        image=np.asarray(image, dtype=np.uint8),
        t_server=t_server,
        pose=_optional(out, "pose", np.float64),
        intrinsics=_optional(out, "intrinsics", np.float64),
        depth=_optional(out, "depth", np.float32),
    )


MAX_PROMPT_CHARS = 100_000
"""Of a client's caption, at most this many characters (a published caption is a paragraph)."""


def _image_under_root(path: str, root: Path | None) -> Path:
    """``path`` as a file under ``root``, the only folder a client may name images in. A
    network client naming any file the server can open would make the model start from (and
    show) it, so without a root no path is taken, and a path that resolves outside the root
    (``..``, a symbolic link) is refused."""
    if root is None:
        raise StartRefused(
            "image_path is not taken by this server (send image_base64, or start the server "
            "with --image-root DIR to allow files under DIR)"
        )
    base = root.resolve()
    target = (base / path).resolve()
    if not target.is_relative_to(base):
        raise StartRefused(f"image_path {path!r} is outside the server's --image-root")
    return target


def _start_image(body: Mapping[str, Any], image_root: Path | None = None) -> Any:
    """The RGB image of a start message: ``image_base64`` (a ``data:`` URL too) or
    ``image_path`` (a file under ``image_root``, relative to it or absolute inside it); None
    when it carries neither."""
    from streameval.cases.images import decode_image, read_image_bytes

    inline, path = body.get("image_base64"), body.get("image_path")
    raw = body.get("image_bytes")  # our protocol's reset: the file's bytes as they are
    try:
        if isinstance(raw, bytes) and raw:
            return decode_image(raw, "the reset's image")
        if isinstance(inline, str) and inline:
            text = inline.split(",", 1)[1] if inline.startswith("data:") else inline
            try:
                data = base64.b64decode(text, validate=True)
            except (binascii.Error, ValueError):
                raise StartRefused(
                    f"image_base64 of {len(text)} characters is not base64"
                ) from None
            return decode_image(data, "image_base64")
        if isinstance(path, str) and path:
            target = _image_under_root(path, image_root)
            try:
                data = read_image_bytes(target)
            except BadInputError as exc:  # in the client's words, not the server's folders
                raise StartRefused(f"the case image: {path}: {exc.problem}") from None
            return decode_image(data, path)
    except BadInputError as exc:
        raise StartRefused(f"the case image: {exc}") from None
    if inline is not None or path is not None:
        raise StartRefused("image_base64 / image_path is not a non-empty string")
    return None


def _start_intrinsics(value: Any) -> tuple[float, ...] | None:
    if value is None:
        return None
    ok = isinstance(value, list | tuple) and len(value) == 4
    numbers = (
        [v for v in value if isinstance(v, int | float) and not isinstance(v, bool)] if ok else []
    )
    if len(numbers) != 4 or not all(math.isfinite(v) for v in numbers):
        raise StartRefused(
            f"intrinsics must be [fx, fy, cx, cy], four finite numbers: {value!r:.80}"
        )
    return tuple(float(v) for v in numbers)


def start_names(model: Any) -> tuple[str, ...]:
    """What of a case start (``START_NAMES``) the model's ``reset`` takes by name: what a
    server announces in its ``hello``, so no evaluator sends it an image it would drop."""
    from streameval.transports.inprocess.driver import ALL_KEYWORDS, reset_keywords

    reset = getattr(model, "reset", None)
    accepted = reset_keywords(reset if callable(reset) else None)
    return tuple(n for n in START_NAMES if accepted is ALL_KEYWORDS or n in accepted)


def wire_start_body(start: CaseStart) -> dict[str, Any]:
    """A ``reset``'s case start as the start message ``start_arguments`` reads."""
    return {
        "image_bytes": start.image,
        "prompt": start.prompt,
        "intrinsics": list(start.intrinsics) if start.intrinsics is not None else None,
    }


def start_arguments(
    model: Any, body: Mapping[str, Any], image_root: Path | None = None
) -> dict[str, Any]:
    """What ``model.reset`` receives for a client's start message (``image_base64`` or
    ``image_path`` under ``image_root``, ``prompt``, ``intrinsics``), by the names its
    ``reset`` accepts. An image its ``reset`` cannot take is refused, never dropped: the case
    would run from wherever the model starts. ``StartRefused``: one line for the client."""
    from streameval.transports.inprocess.driver import ALL_KEYWORDS, reset_keywords

    prompt = body.get("prompt")
    if prompt is not None and not isinstance(prompt, str):
        raise StartRefused(f"prompt is a {type(prompt).__name__}, expected text")
    if prompt is not None and len(prompt) > MAX_PROMPT_CHARS:
        raise StartRefused(f"prompt of {len(prompt):,} characters (at most {MAX_PROMPT_CHARS:,})")
    given = {
        "image": _start_image(body, image_root),
        "prompt": prompt,
        "intrinsics": _start_intrinsics(body.get("intrinsics")),
    }
    reset = getattr(model, "reset", None)
    accepted = reset_keywords(reset)
    if given["image"] is not None and accepted is not ALL_KEYWORDS and "image" not in accepted:
        what = "has no reset()" if not callable(reset) else "has a reset() that takes no image"
        raise StartRefused(
            f"the served model {what}: it cannot start from the case image "
            "(give it reset(self, image=None, prompt=None, intrinsics=None))"
        )
    return {
        name: value
        for name, value in given.items()
        if value is not None and (accepted is ALL_KEYWORDS or name in accepted)
    }


class ModelHost:
    def __init__(
        self,
        model: Any,
        fps: float,
        publish: PublishFrame,
        *,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        refuse: Refuse | None = None,
    ) -> None:
        self.model = model
        self.refuse = refuse
        self.episode = ""  # the last reset's: what a failed step names to the client
        self.refused = False  # the last reset's start was refused: no frame until the next
        self.fps = fps
        self.publish = publish
        self.idle_timeout_s = idle_timeout_s
        self.next_index = 0
        self.held = NO_KEY
        self.playing = False
        self.last_message = time.perf_counter()
        self._steps: asyncio.Queue[Step] = asyncio.Queue()
        self._lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._step_loop()), asyncio.create_task(self._play())]
        for task in self._tasks:
            task.add_done_callback(_say_if_crashed)

    async def stop(self) -> None:
        await cancel_and_wait(self._tasks)

    async def handle(self, message: Message) -> None:
        self.last_message = time.perf_counter()
        if isinstance(message, Reset):
            self.episode = message.episode
            await self._reset(message)
        elif isinstance(message, Step):
            if not self.refused:
                self._steps.put_nowait(message)
        elif isinstance(message, KeyDown) and not self.refused:
            self.held = message.key
            self.playing = True
        elif isinstance(message, KeyUp):
            if message.key == self.held:
                self.held = NO_KEY
        elif isinstance(message, Bye):
            self.playing = False
        elif isinstance(message, Heartbeat):
            pass

    async def _reset(self, message: Reset) -> None:
        """Our protocol's ``reset``: with a case start, the model's ``reset`` receives its
        image, caption and intrinsics (``start_arguments``); a start it cannot take is
        refused in one line (``refuse``) and the session renders nothing until the next
        ``reset``, so no frame of the former episode passes for this case's."""
        if message.start is None:
            await self.restart({})
            return
        try:
            await self.restart(start_arguments(self.model, wire_start_body(message.start)))
        except StartRefused as exc:
            words = str(exc)
        except Exception as exc:  # the model's own reset failed: its words, the server goes on
            words = " ".join(f"reset failed: {type(exc).__name__}: {exc}".split())[:300]
        else:
            return
        print(f"serve: refused the start of {message.episode!r}: {words}", file=sys.stderr)
        self.refused = True
        self.playing = False
        while not self._steps.empty():
            self._steps.get_nowait()
        if self.refuse is not None:
            await self.refuse(message.episode, words)

    async def restart(self, arguments: dict[str, Any]) -> None:
        """Start over: steps queued before are dropped, the model's ``reset`` called with
        ``arguments`` (a case's image, caption, intrinsics: ``start_arguments``), frame 0 next."""
        self.last_message = time.perf_counter()
        async with self._lock:
            self.playing = False
            while not self._steps.empty():
                self._steps.get_nowait()
            if callable(getattr(self.model, "reset", None)):
                await asyncio.to_thread(self.model.reset, **arguments)
            self.next_index = 0
            self.held = NO_KEY
            self.refused = False

    async def _render(self, key: str) -> None:
        """One frame under ``key``, published. A step that raises, or returns what is not a
        frame we can send, ends the episode in one line naming it (``_fail``): the server
        goes on for the next ``reset``, and the client is not left waiting for a frame."""
        index = self.next_index
        try:
            out = await asyncio.to_thread(self.model.step, key)
            frame = wire_frame(index, key, out, t_server=time.time())
        except Exception as exc:
            await self._fail(f"model.step({key!r}) for frame {index} failed", exc)
            return
        self.next_index += 1
        try:
            await self.publish(frame)
        except Exception as exc:
            await self._fail(f"frame {index} of model.step({key!r}) cannot be sent", exc)

    async def _fail(self, what: str, exc: Exception) -> None:
        """A failed step: one line on the server's stderr, and the client told (``refuse``)
        so that its episode ends at once, incomplete, in these words; no frame until the
        next ``reset`` (the model's state after a failed step is not the episode's)."""
        words = one_line(f"{what}: {type(exc).__name__}: {exc}")[:300]
        print(f"serve: {words}", file=sys.stderr, flush=True)
        self.refused = True
        self.playing = False
        while not self._steps.empty():
            self._steps.get_nowait()
        if self.refuse is not None:
            await self.refuse(self.episode, words)

    async def _step_loop(self) -> None:
        while True:
            step = await self._steps.get()
            async with self._lock:
                if step.index == self.next_index:
                    await self._render(step.key)

    async def _play(self) -> None:
        """Wall clock: one frame per 1/fps while a client holds the session."""
        period = 1.0 / self.fps
        t_next = time.perf_counter()
        while True:
            now = time.perf_counter()
            if self.playing and now - self.last_message > self.idle_timeout_s:
                self.playing = False  # a silent client is gone (public servers do the same)
            if not self.playing:
                await asyncio.sleep(0.01)
                t_next = time.perf_counter()
                continue
            async with self._lock:
                await self._render(self.held)
            t_next += period
            # a slow model plays slower rather than bursting to catch up
            t_next = max(t_next, time.perf_counter() - period)
            await asyncio.sleep(max(0.0, t_next - time.perf_counter()))


def _say_if_crashed(task: asyncio.Task[None]) -> None:
    """A host task that ended by an exception would leave the server silent: say it."""
    if not task.cancelled() and task.exception() is not None:
        exc = task.exception()
        print(
            f"serve: internal error, the model host stopped: {type(exc).__name__}: {exc}",
            file=sys.stderr,
            flush=True,
        )
