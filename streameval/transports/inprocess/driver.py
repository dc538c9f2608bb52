"""The protocol driver for an in-process model: any object with ``step(key) -> frame``.

The driver owns the schedule and the clock: frame i is conditioned on the key the schedule
gives for video time i / fps, so a slow model still gets its 20 s of video per key. The model
runs in its own thread (``model_thread.py``) so the event loop keeps serving the pipeline
meanwhile, and a model that hangs costs one timeout, never the process.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from streameval.core.events import (
    EndOfStream,
    EpisodeEnd,
    EpisodeInfo,
    EpisodeStart,
    Event,
    FrameEvent,
    KeySent,
    SourceError,
)
from streameval.errors import BadFrameError, ModelCallTimeoutError, one_line
from streameval.inputs.arrays import depth_problem, intrinsics_problem, pose_problem
from streameval.inputs.frames import frame_problem
from streameval.protocol.schedule import Schedule
from streameval.transports.inprocess.model_thread import (
    DEFAULT_STEP_TIMEOUT_S,
    ModelHealth,
    ModelThread,
)

if TYPE_CHECKING:
    from streameval.cases.conditioning import Conditioning

ALL_KEYWORDS = None
"""``reset_keywords`` of a ``reset(**kwargs)``: it accepts every name."""


def reset_keywords(reset: Callable[..., Any] | None) -> frozenset[str] | None:
    """The keyword arguments ``reset`` accepts by name: ``ALL_KEYWORDS`` (None) when it takes
    ``**kwargs``; empty when there is no ``reset`` or its signature cannot be read (a builtin
    without one: nothing is passed that it might not take)."""
    if reset is None or not callable(reset):
        return frozenset()
    try:
        parameters = inspect.signature(reset).parameters.values()
    except (TypeError, ValueError):
        return frozenset()
    names: set[str] = set()
    for p in parameters:
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            return ALL_KEYWORDS
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            names.add(p.name)
    return frozenset(names)


def accepted_reset_arguments(
    reset: Callable[..., Any] | None, conditioning: Conditioning
) -> dict[str, Any]:
    """What of ``conditioning.reset_arguments()`` a model's ``reset`` takes by name (values
    that are None are not passed: a case without a caption sends no ``prompt``)."""
    accepted = reset_keywords(reset)
    return {
        name: value
        for name, value in conditioning.reset_arguments().items()
        if value is not None and (accepted is ALL_KEYWORDS or name in accepted)
    }


class SteppableModel(Protocol):
    """A world model in the same process: one call per frame."""

    def step(self, key: str) -> Any: ...


def _optional_array(frame: Any, name: str, dtype: type) -> Any:
    value = getattr(frame, name, None)
    if value is None:
        return None
    try:
        return np.asarray(value, dtype=dtype)
    except (TypeError, ValueError, OverflowError) as exc:
        raise BadFrameError(f"{name} is not a numeric array ({one_line(str(exc))})") from None


def _geometry_problem(event: FrameEvent) -> str | None:
    """The same rules as the replay sidecars (``replay/sidecars.py``), frame by frame."""
    if event.pose is not None:
        why = pose_problem(event.pose)
        if why is not None:
            return f"pose {why}"
    if event.intrinsics is not None:
        why = intrinsics_problem(event.intrinsics)
        if why is not None:
            return f"intrinsics {why}"
    if event.depth is not None:
        why = depth_problem(event.depth, (event.image.shape[0], event.image.shape[1]))
        if why is not None:
            return f"depth {why}"
    return None


class InProcessSource:
    """Drives ``model`` through ``schedule`` and yields its frames as events.

    A frame may be a bare H×W×3 uint8 array or an object with ``image`` and optional ``pose``
    (4×4 camera-to-world), ``depth`` and ``intrinsics`` attributes. Every call into the model
    (``reset()`` when asked, each ``step()``) runs in the source's own thread under
    ``step_timeout`` seconds; a call that fails, hangs or returns a bad frame ends the episode
    as incomplete with one error naming the model and the frame (``inputs/frames.py``: the
    same rule as replay).

    ``conditioning`` (a benchmark case's start): ``reset`` is called before the first step
    with the names of ``conditioning.reset_arguments()`` that its signature accepts
    (``image=``, ``prompt=``, ``intrinsics=``; ``**kwargs`` takes all). Whether the model can
    take the image at all is checked before the run (``runs.cases``); here it is only sent.
    """

    droppable = False  # the driver simply waits: stepping is the back-pressure

    def __init__(
        self,
        model: SteppableModel,
        schedule: Schedule,
        *,
        episode: str,
        model_name: str,
        suite: str,
        width: int | None = None,
        height: int | None = None,
        step_timeout: float = DEFAULT_STEP_TIMEOUT_S,
        reset: bool = False,
        health: ModelHealth | None = None,
        trajectory: str | None = None,
        conditioning: Conditioning | None = None,
    ) -> None:
        self.model = model
        self.schedule = schedule
        extra: dict[str, Any] = {"depth_source": "model", "live": True, "trajectory": trajectory}
        self._reset_arguments: dict[str, Any] = {}
        if conditioning is not None:
            from streameval.cases.episode import case_extra

            reset_fn = getattr(model, "reset", None)
            self._reset_arguments = accepted_reset_arguments(reset_fn, conditioning)
            reset = reset or callable(reset_fn)
            extra.update(case_extra(conditioning, sent=bool(self._reset_arguments)))
        self.info = EpisodeInfo(
            episode=episode,
            model=model_name,
            suite=suite,
            fps=schedule.fps,
            schedule=schedule,
            source=f"python:{model_name}",
            width=width,
            height=height,
            extra=extra,
        )
        self.step_timeout = step_timeout
        self.health = health or ModelHealth()
        self._reset_pending = reset
        self._size = (height, width) if width is not None and height is not None else None
        self._thread: ModelThread | None = None
        self._pending: list[Event] = [EpisodeStart(self.info)]
        self._next = 0
        self._done = False
        self._closed = False

    def __repr__(self) -> str:  # error messages name the model, not an object address
        return self.info.source

    async def _call(self, what: str, fn: Any, *args: Any) -> Any:
        if self._thread is None:
            self._thread = ModelThread(self.info.model)
        try:
            return await self._thread.call(self.step_timeout, fn, *args)
        except ModelCallTimeoutError as exc:
            limit = f"{self.step_timeout:g} s"
            self.health.hung = f"{what} gave no answer within --step-timeout {limit}"
            raise ModelCallTimeoutError(f"{exc} (--step-timeout)") from None

    def _fail(self, frame: int, message: str) -> SourceError:
        self._done = True
        text = f"{self.info.source}: {message}"
        self._pending.append(EpisodeEnd(frames=frame, complete=False, reason=text))
        return SourceError(text, True)

    async def recv(self) -> Event:
        if self._pending:
            return self._pending.pop(0)
        if self._done or self._closed:
            raise EndOfStream
        i = self._next
        if self._reset_pending:
            self._reset_pending = False
            try:
                reset_fn = self.model.reset  # type: ignore[attr-defined]
                if self._reset_arguments:
                    arguments = self._reset_arguments
                    await self._call("reset()", lambda: reset_fn(**arguments))
                else:
                    await self._call("reset()", reset_fn)
            except Exception as exc:
                return self._fail(i, f"reset() failed: {type(exc).__name__}: {one_line(str(exc))}")
        if i >= self.schedule.total_frames:
            self._done = True
            return EpisodeEnd(frames=i, complete=True)
        key = self.schedule.key_for_frame(i)
        sent = time.perf_counter()
        try:
            frame = await self._call(f"step({key!r}) at frame {i}", self.model.step, key)
        except Exception as exc:  # the model's own failure ends this episode, not the process
            return self._fail(i, f"step({key!r}) at frame {i} failed: {one_line(str(exc))}")
        try:
            event = self._frame_event(i, key, frame)
        except BadFrameError as exc:
            return self._fail(i, f"frame {i} {exc}")
        self._next = i + 1
        self._pending.append(event)
        return KeySent(key=key, frame=i, t_wall=sent)

    def _frame_event(self, i: int, key: str, frame: Any) -> FrameEvent:
        image = frame if isinstance(frame, np.ndarray) else getattr(frame, "image", frame)
        problem = frame_problem(image, self._size)
        if problem is not None:
            raise BadFrameError(problem)
        self._size = (int(image.shape[0]), int(image.shape[1]))
        event = FrameEvent(
            index=i,
            image=image,
            key=key,
            t_video=i / self.schedule.fps,
            t_wall=time.perf_counter(),
            pose=_optional_array(frame, "pose", np.float64),
            depth=_optional_array(frame, "depth", np.float32),
            intrinsics=_optional_array(frame, "intrinsics", np.float64),
        )
        why = _geometry_problem(event)
        if why is not None:
            raise BadFrameError(why)
        return event

    async def close(self) -> None:
        self._closed = True
        if self._thread is not None:
            self._thread.close()
