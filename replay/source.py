"""Replay a recorded rollout through the same ``Source`` interface as a live model.

Events: ``EpisodeStart``, then for each frame the keystrokes recorded for it (``KeySent``, from
``keys.jsonl``), the chunks that closed before it (``ChunkDone``, from ``chunks.jsonl``) and its
``FrameEvent``, then ``EpisodeEnd``; then ``EndOfStream``. Frames are
decoded in a background thread into a small bounded buffer (``replay/pump.py``); with a pace
they are released at start + i / pace.

A video that stops early or cannot be decoded, a frame of the wrong size or a depth map that
cannot be used ends the episode with ``SourceError(fatal=True)`` naming the file and the frame,
then ``EpisodeEnd(complete=False)``: the frames before it are still scored.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from streameval.replay.pacer import Pacer
from streameval.replay.pump import DEFAULT_CAPACITY, ThreadPump
from streameval.replay.rollout import Rollout

from streameval.core.events import (
    ChunkDone,
    EndOfStream,
    EpisodeEnd,
    EpisodeStart,
    Event,
    FrameEvent,
    KeySent,
    SourceError,
)
from streameval.errors import BadInputError, DepthFrameError, FrameReadError
from streameval.inputs.frames import frame_problem


@dataclass(frozen=True, slots=True)
class _Finish:
    """No more frames; ``error`` says why when it is not the end of the rollout."""

    error: str | None = None


def produce_frames(rollout: Rollout) -> Iterator[FrameEvent | _Finish]:
    """Frame events of ``rollout`` in order, then one ``_Finish`` (runs in the pump's thread)."""
    images = rollout.frames.read()
    sidecars = rollout.sidecars
    depth = sidecars.open_depth() if sidecars is not None else None
    path = rollout.frames.path
    try:
        for index in range(rollout.frame_count):
            try:
                image = next(images)
            except StopIteration:
                yield _Finish(
                    f"{path}: the video ends after {index} of {rollout.frame_count} frames"
                )
                return
            except FrameReadError as exc:
                yield _Finish(str(exc))
                return
            problem = frame_problem(image, (rollout.height, rollout.width))
            if problem is not None:
                yield _Finish(f"{path}: frame {index} {problem}")
                return
            try:
                depth_map = depth.frame(index) if depth is not None else None
            except DepthFrameError as exc:
                yield _Finish(str(exc))
                return
            yield FrameEvent(
                index=index,
                image=image,
                key=rollout.frame_keys[index],
                t_video=index / rollout.fps,
                t_wall=rollout.t_wall[index] if rollout.t_wall is not None else None,
                pose=sidecars.pose_at(index) if sidecars is not None else None,
                depth=depth_map,
                intrinsics=sidecars.intrinsics_at(index) if sidecars is not None else None,
            )
        yield _Finish()
    finally:
        close_images = getattr(images, "close", None)
        if close_images is not None:
            close_images()
        if depth is not None:
            depth.close()


class ReplaySource:
    """A ``streameval.core.source.Source`` over a ``Rollout``. Frames are never dropped: it waits.

    ``pace`` is frames per second of wall time (``None``: as fast as the consumer takes them).
    """

    droppable = False

    def __init__(
        self, rollout: Rollout, pace: float | None = None, *, buffer_frames: int = DEFAULT_CAPACITY
    ) -> None:
        if pace is not None and not (math.isfinite(pace) and pace > 0):
            raise BadInputError("--fps", f"{pace} is not a positive frame rate")
        self.rollout = rollout
        self.pacer = Pacer(pace)
        self._pump: ThreadPump[FrameEvent | _Finish] = ThreadPump(
            lambda: produce_frames(rollout),
            capacity=buffer_frames,
            name=f"replay:{rollout.episode}",
        )
        self._keys: deque[KeySent] = deque(rollout.keys_sent)
        self._chunks: deque[ChunkDone] = deque(rollout.chunks)
        self._pending: deque[Event] = deque()
        self._started = False
        self._ended = False
        self._frames = 0

    async def recv(self) -> Event:
        if self._pending:
            return self._pending.popleft()
        if self._ended:
            raise EndOfStream
        if not self._started:
            self._started = True
            self._pump.start()  # decode the first frames while the pipeline sets up
            return EpisodeStart(self.rollout.info())
        if self._keys and self._keys[0].frame <= self._frames:
            return self._keys.popleft()
        if self._chunks and self._chunks[0].start + self._chunks[0].frames <= self._frames:
            return self._chunks.popleft()
        item = await self._next_item()
        if isinstance(item, FrameEvent):
            await self.pacer.wait(item.index)
            self._frames += 1
            return item
        self._finish(item)
        await self._pump.close()
        return self._pending.popleft()

    async def _next_item(self) -> FrameEvent | _Finish:
        try:
            return await self._pump.get()
        except StopAsyncIteration:
            return _Finish(f"{self.rollout.frames.path}: frames ended unexpectedly")
        except Exception as exc:  # a failure on one frame is an event, never a dead session
            return _Finish(
                f"{self.rollout.frames.path}: frame {self._frames}: {type(exc).__name__}: {exc}"
            )

    def _finish(self, item: _Finish) -> None:
        self._ended = True
        self._pending.extend(self._keys)  # keystrokes sent for frames that never came
        self._keys.clear()
        self._pending.extend(self._chunks)  # chunks the live run closed at its end
        self._chunks.clear()
        if item.error is not None:
            self._pending.append(SourceError(item.error, fatal=True))
            reason: str | None = item.error
        elif not self.rollout.complete:
            reason = self.rollout.reason or "the recording is marked incomplete"
        else:
            reason = None
        self._pending.append(
            EpisodeEnd(frames=self._frames, complete=reason is None, reason=reason)
        )

    async def close(self) -> None:
        """Stop decoding and release the video (safe to call more than once)."""
        self._ended = True
        self._pending.clear()
        await self._pump.close()
