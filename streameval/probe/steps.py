"""One probe of a model driven frame by frame: ``python:M:F``, in process or in its own
environment through the bridge (``--python``).

An adapter takes W S A D L R itself, so there is no name to find; what a lab does not know is
whether its adapter's keys do what they say (a sign flipped between the adapter and the
model's action vector, a strafe wired to the camera's yaw), how soon the picture answers, and
how fast the model really steps. The plan is the stream probe's (``session``): a rest, then
each key held ``press_s`` and rested ``rest_s``, but counted in frames of video (frame i is
conditioned on the key the plan gives for i / fps, as in a run), so the windows are cut
exactly and the rests need no waiting for stillness. The model is driven by the in-process
source a run uses (``transports/inprocess``): its thread, its ``--step-timeout``, its
``reset`` with a case's image (``--image``), and the bridge's worker behind it unchanged.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from streameval.core.events import EndOfStream, EpisodeEnd, ErrorEvent, FrameEvent
from streameval.probe.session import REST_NAME, ProbeSession, WindowPlan
from streameval.protocol.keys import NO_KEY
from streameval.protocol.schedule import Schedule
from streameval.transports.inprocess.driver import InProcessSource

if TYPE_CHECKING:
    from streameval.cases.conditioning import Conditioning


@dataclass(frozen=True, slots=True)
class StepPlan:
    """The probe's schedule in frames: ``schedule`` (the rest, then each name and a rest) and
    where each window starts and its key is released, in seconds of video."""

    schedule: Schedule
    windows: tuple[tuple[str, float, float], ...]  # (name, t_down, t_up)


def step_plan(names: tuple[str, ...], fps: float, press_s: float, rest_s: float) -> StepPlan:
    """The rest (``rest_s``), then per name ``press_s`` held and ``rest_s`` at rest, in whole
    frames (each at least one)."""
    press = max(1, round(press_s * fps))
    rest = max(1, round(rest_s * fps))
    keys: list[str] = [NO_KEY]
    bounds = [0, rest]
    windows = [(REST_NAME, 0.0, rest / fps)]
    for name in names:
        down = bounds[-1]
        keys += [name, NO_KEY]
        bounds += [down + press, down + press + rest]
        windows.append((name, down / fps, (down + press) / fps))
    return StepPlan(Schedule(tuple(keys), float(fps), tuple(bounds)), tuple(windows))


async def run_step_probe(
    model: Any,
    *,
    model_name: str,
    fps: float,
    names: tuple[str, ...],
    press_s: float,
    rest_s: float,
    step_timeout: float,
    conditioning: Conditioning | None = None,
    width: int | None = None,
    height: int | None = None,
) -> tuple[ProbeSession, float | None]:
    """Step ``model`` through the plan of ``names`` and measure each window; with the frames
    it stepped a second of wall time (whether it keeps up with ``fps``; None when fewer than
    two came). A step that fails, hangs or returns a bad frame ends the probe there with its
    words (``end_reason``), what was measured before it kept."""
    plan_of = step_plan(names, fps, press_s, rest_s)
    source = InProcessSource(
        model,
        plan_of.schedule,
        episode="probe",
        model_name=model_name,
        suite="probe",
        width=width,
        height=height,
        step_timeout=step_timeout,
        reset=callable(getattr(model, "reset", None)),
        conditioning=conditioning,
    )
    plan = WindowPlan()
    for name, down, up in plan_of.windows:
        plan.open(name, down)
        plan.release(up)
    out = ProbeSession(pressed=[n for n, _, _ in plan_of.windows[1:]])
    started: float | None = None
    last = 0.0
    try:
        while True:
            try:
                event = await source.recv()
            except EndOfStream:
                break
            if isinstance(event, FrameEvent):
                last = time.perf_counter()
                started = last if started is None else started
                if out.first_frame is None:
                    out.first_frame = event.image
                    out.size = (event.image.shape[1], event.image.shape[0])
                out.times.append(event.index / fps)
                plan.frame(event.index / fps, event.image)
            elif isinstance(event, ErrorEvent):
                out.errors.append(event.message)
            elif isinstance(event, EpisodeEnd):
                out.complete = event.complete
                out.end_reason = event.reason
        plan.close_all()
        out.windows = await plan.results()
    finally:
        plan.shutdown()
        await source.close()
    # steps per second between the first frame and the last (the load and the first step's
    # warm-up are the model's, not its pace)
    steps = len(out.times) - 1
    pace = (
        steps / (last - started) if started is not None and steps > 0 and last > started else None
    )
    return out, pace
