"""One episode's work as a picklable task: what a Ray worker runs, free of Ray itself.

A batch is a list of small descriptions (a rollout path, a results folder, a pace), not of
opened sources: a worker on another machine re-reads the rollout from the shared path, so
nothing large or unpicklable (video decoders, threads) crosses the wire. The worker runs the
very ``run_episode`` a local ``streameval replay`` runs, into the same results folder, which
is why a batch's scores.json equals a local run's.

Results folders must be on storage every worker sees (the rollouts too): a shared file system
on a cluster, the local disk on one machine.
"""

from __future__ import annotations

import asyncio
import os
import resource
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from streameval.core.observers import EpisodeOutcome
from streameval.engine.config import PipelineConfig
from streameval.engine.pipeline import run_episode
from streameval.engine.rescore import RescoreOutcome, rescore_dir
from streameval.errors import BackendUnavailableError, BadInputError, UnknownBackendError
from streameval.results.episode_state import clear_episode, episode_finished


@dataclass(frozen=True, slots=True)
class ReplayTask:
    """Replay one rollout into ``results_dir``; ``rollout`` is any path ``read_rollout``
    accepts (rollout directory, adapter directory or delivery video)."""

    episode: str
    rollout: Path
    results_dir: Path
    pace: float | None = None


@dataclass(frozen=True, slots=True)
class TaskReport:
    """What came back from one task: an outcome, a rescore, or the bad input that stopped it.

    ``worker`` (host:pid) says where it ran: a retried task reports the worker that finished.
    """

    name: str
    results_dir: Path
    worker: str
    seconds: float
    # CPU time of the worker process (all its threads) and of the children it reaped (the
    # TransNetV2 worker) on the task
    cpu_seconds: float = 0.0
    outcome: EpisodeOutcome | None = None
    rescore: RescoreOutcome | None = None
    bad_input: str | None = None


def cpu_time() -> float:
    """CPU seconds of this process, of its reaped children and of the idle TransNetV2 workers
    (a child process each, reused across episodes: without them an episode's cost with
    TransNetV2 cuts was under-counted 3.4×)."""
    from streameval.perception.transnet_pool import POOL

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime + POOL.idle_cpu_seconds()


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def split_finished(tasks: Iterable[ReplayTask]) -> tuple[list[ReplayTask], list[ReplayTask]]:
    """(tasks to run, tasks whose episode is already scored complete): resuming a batch, with
    the answer ``--resume`` gives (``episode_state.episode_finished``)."""
    to_run: list[ReplayTask] = []
    finished: list[ReplayTask] = []
    for task in tasks:
        (finished if episode_finished(task.results_dir) else to_run).append(task)
    return to_run, finished


def run_replay_task(task: ReplayTask, config: PipelineConfig) -> TaskReport:
    """Score one rollout exactly as ``streameval replay`` does, in this process."""
    from streameval.replay import ReplaySource, read_rollout

    start, cpu_start = time.perf_counter(), cpu_time()
    try:
        rollout = read_rollout(task.rollout)
    except (BadInputError, OSError) as exc:
        message = str(exc) if isinstance(exc, BadInputError) else f"{task.rollout}: {exc}"
        return TaskReport(task.episode, task.results_dir, worker_id(), 0.0, bad_input=message)
    # a task retried after its worker was killed starts from nothing, as the first attempt did;
    # a rollout that is the folder's own recording stays (read lazily, frame by frame)
    clear_episode(task.results_dir, replaying=task.rollout)
    try:
        outcome = asyncio.run(
            run_episode(
                ReplaySource(rollout, pace=task.pace),
                config=config,
                results_dir=task.results_dir,
            )
        )
    except (BadInputError, UnknownBackendError, BackendUnavailableError) as exc:
        return TaskReport(task.episode, task.results_dir, worker_id(), 0.0, bad_input=str(exc))
    seconds, cpu = time.perf_counter() - start, cpu_time() - cpu_start
    return TaskReport(task.episode, task.results_dir, worker_id(), seconds, cpu, outcome=outcome)


def run_rescore_task(results_dir: Path) -> TaskReport:
    """``streameval rescore`` of one results folder, in this process."""
    start = time.perf_counter()
    try:
        rescored = rescore_dir(results_dir)
    except BadInputError as exc:
        return TaskReport(results_dir.name, results_dir, worker_id(), 0.0, bad_input=str(exc))
    seconds = time.perf_counter() - start
    return TaskReport(results_dir.name, results_dir, worker_id(), seconds, rescore=rescored)
