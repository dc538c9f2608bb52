"""One model served on several servers: the cases handed out as servers free up.

A lab serves one model on several GPUs, one session each. ``dispatch`` runs a list of jobs
over a list of openers (one per server): each server runs one job at a time, the next job in
order goes to whichever server frees up first, and no more than ``max_sessions`` run at once
(what the evaluator's own cores keep up with: every session is decoded and perceived here,
``default_max_sessions``). Each job runs once; a job that fails is its own outcome (an
incomplete episode, a refused case), never run again elsewhere — except a job its server
could not even start (unreachable): that server is retired and the job goes to another, while
another is left.

``EpisodeJob.open_source`` takes no argument (the case runner builds it once per case), so the
server a job runs on is the dispatcher's choice at the moment it starts: ``ServerChoice`` is
an ``open_for_case`` over several servers' openers that opens on the server of the task it
runs in, which ``run_jobs_on_servers`` sets (``SERVER_SLOT``, a context variable: each
server's worker task has its own).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Generic, ParamSpec, TypeVar

from streameval.core.parallel import available_cores

if TYPE_CHECKING:
    from streameval.core.observers import EpisodeObserver
    from streameval.engine.config import PipelineConfig
    from streameval.runs.jobs import EpisodeJob, JobsReport, StopCheck

log = logging.getLogger(__name__)
J = TypeVar("J")
Opener = TypeVar("Opener")
P = ParamSpec("P")
S = TypeVar("S")

SESSION_CPU_PER_VIDEO_S: dict[str, float] = {"transnetv2": 0.27, "scenedetect-adaptive": 0.21}
"""Evaluator CPU seconds one 16 fps session costs per second of video, by cut detector, with
the other CPU defaults (DIS flow, the CPU descriptor, imaging statistics): the whole session
— decode, perception, the cut detector's worker, the episode's scoring at its end — on the
2-core development machine (docs/benchmarks.md#sessions-one-evaluator-keeps-up-with), the
highest figure kept. TransNetV2's is for its bfloat16 pass (a CPU with AVX512-BF16 or AMX and
the ``openvino`` package): 0.222 replayed flat out (bench/throughput.py), 0.243–0.271 live over
WebSocket with 2 to 5 sessions side by side (bench/live_sessions.py, JPEG decode included), so
two cores keep up with 5 sessions, as 5 live ones did (0 dropped); PySceneDetect's 0.178–0.208.
``TRANSNETV2_FLOAT32_CPU_PER_VIDEO_S`` holds where TransNetV2 runs in float32. Another detector
or none is counted as the dearest of these."""

TRANSNETV2_FLOAT32_CPU_PER_VIDEO_S = 0.42
"""The default stack's cost where TransNetV2 runs in float32 (no native bfloat16, eager torch,
or ``openvino-f32``): measured 0.387–0.415 on the development machine before the bfloat16
pass, the higher kept."""


def session_cpu_per_video_s(name: str) -> float:
    """The planned CPU seconds per video second of a session whose cut detector is ``name``
    (a resolved detector name), on this machine."""
    from streameval.perception.transnet_runtime import expects_bfloat16

    if name == "transnetv2" and not expects_bfloat16():
        return TRANSNETV2_FLOAT32_CPU_PER_VIDEO_S
    if name in SESSION_CPU_PER_VIDEO_S:
        return SESSION_CPU_PER_VIDEO_S[name]
    return max(session_cpu_per_video_s(known) for known in SESSION_CPU_PER_VIDEO_S)


SESSION_HEADROOM = 0.75
"""The share of the evaluator's cores its sessions are planned to use: a live session must
never fall behind (it would drop frames), and each case's end scores its episode in a burst
while the other servers stream on."""

SERVER_SLOT: contextvars.ContextVar[int] = contextvars.ContextVar("server_slot", default=0)
"""The index of the server the current task's job runs on (``ServerChoice`` reads it)."""


def sessions_kept_up(cores: float, cpu_per_video_s: float) -> int:
    """How many 16 fps sessions of ``cpu_per_video_s`` CPU seconds per video second ``cores``
    cores keep up with, ``SESSION_HEADROOM`` of them used; at least one."""
    return max(1, int(cores * SESSION_HEADROOM / cpu_per_video_s))


def default_max_sessions(cores: int | None = None, cuts: str | None = "auto") -> int:
    """How many sessions one evaluator runs at once: what its cores keep up with
    (``sessions_kept_up``) with the cut detector ``cuts`` (``PipelineConfig.cuts``)."""
    from streameval.perception.memory import resolve_cut_detector_name

    cores = available_cores() if cores is None else cores
    name = resolve_cut_detector_name(cuts) if cuts else ""
    return sessions_kept_up(cores, session_cpu_per_video_s(name))


async def dispatch(
    jobs: Sequence[J],
    openers: Sequence[Opener],
    run_one: Callable[[J, Opener, bool], Awaitable[bool | None]],
    *,
    max_sessions: int | None = None,
    stop: Callable[[], Awaitable[bool]] | None = None,
) -> None:
    """Run every job once, each with one of ``openers``: one job per opener at a time, jobs
    handed out in order as openers free up, at most ``max_sessions`` at once (default: the
    number of openers; fewer openers are used when it is lower).

    ``run_one(job, opener, last)`` returns False when the opener could not even start the job
    (an unreachable server): unless it is the ``last`` opener still working, it is retired and
    the job goes back to the front of the queue for the others — a dead server must not
    take every case as fast as it can refuse them. An exception from ``run_one`` cancels the
    rest (a Ctrl-C, say: each running episode ends incomplete). ``stop``, asked before each
    job is handed out, ends the hand-out when True: running jobs finish, no new one starts."""
    if not openers:
        raise ValueError("dispatch needs at least one opener")
    limit = len(openers) if max_sessions is None else max(1, min(max_sessions, len(openers)))
    queue: deque[J] = deque(jobs)
    working = {"n": limit}

    async def worker(slot: int, opener: Opener) -> None:
        SERVER_SLOT.set(slot)  # this task's own context: the jobs it runs open on ``opener``
        while queue:  # shared: the next job goes to the first worker that asks
            if stop is not None and await stop():
                queue.clear()
                return
            if not queue:
                return
            job = queue.popleft()
            if await run_one(job, opener, working["n"] == 1) is False and working["n"] > 1:
                queue.appendleft(job)
                working["n"] -= 1
                return

    async with asyncio.TaskGroup() as group:
        for slot, opener in enumerate(openers[:limit]):
            group.create_task(worker(slot, opener), name=f"server-{slot}")


class ServerChoice(Generic[P, S]):
    """An opener over several servers' openers: called in a task that ``dispatch`` runs, it
    opens on that task's server (``SERVER_SLOT``); elsewhere on the first."""

    def __init__(self, openers: Sequence[Callable[P, S]]) -> None:
        if not openers:
            raise ValueError("ServerChoice needs at least one opener")
        self.openers = list(openers)

    def __len__(self) -> int:
        return len(self.openers)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> S:
        return self.openers[SERVER_SLOT.get() % len(self.openers)](*args, **kwargs)


async def run_jobs_on_servers(
    jobs: list[EpisodeJob],
    servers: int,
    config: PipelineConfig,
    observers: list[EpisodeObserver],
    *,
    max_sessions: int | None = None,
    stop: StopCheck | None = None,
) -> JobsReport:
    """``run_jobs`` over ``servers`` servers at once: the jobs' sources must open through a
    ``ServerChoice`` of that many openers. ``max_sessions`` defaults to what the evaluator's
    cores permit (``default_max_sessions``)."""
    from streameval.runs.jobs import JobsReport, run_job, should_stop

    report = JobsReport()

    async def run_one(job: EpisodeJob, slot: int, last: bool) -> bool:
        before = (len(report.outcomes), len(report.bad_input))
        await run_job(job, config, observers, report)
        started = len(report.outcomes) > before[0] or len(report.bad_input) == before[1]
        if not started and not last:  # its server refused to start it: another one will
            line = report.bad_input.pop()
            log.warning("server %d retired, its cases go to the others: %s", slot, line)
            return False
        return True

    limit = default_max_sessions(cuts=config.cuts) if max_sessions is None else max_sessions
    if limit < servers:
        log.warning(
            "%d servers, at most %d sessions at once: this evaluator's %d cores keep up with %d"
            " live 16 fps sessions of this stack (--max-sessions to change)",
            servers, limit, available_cores(), limit,
        )  # fmt: skip
    await dispatch(
        jobs,
        list(range(servers)),
        run_one,
        max_sessions=limit,
        stop=None if stop is None else lambda: should_stop(stop),
    )
    return report
