"""``replay --ray`` / ``rescore --ray``: one episode per Ray task, over a whole delivery.

Ray does the cluster work (placement, scheduling, retries): each episode is one task running
``streameval.scale.tasks``'s plain function, so its results are those of a local run. A task
whose worker process dies (killed, out of memory, node lost) is re-run by Ray's own task
retries (``max_retries``); the retry clears what the dead attempt left in the episode folder.
GPU backends are placed by asking Ray for ``gpus_per_episode`` GPUs per task, which also sets
the task's ``CUDA_VISIBLE_DEVICES``.

Only this module imports Ray, and only ``cli/ray.py`` imports it, when ``--ray`` is given.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ray
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from streameval.core.observers import EpisodeObserver
from streameval.engine.config import PipelineConfig
from streameval.errors import BadInputError
from streameval.scale.tasks import ReplayTask, TaskReport, run_replay_task, run_rescore_task

# Ray retries a task whose worker died this many times (its default); an exception raised by
# our own code is not retried: it would fail the same way again.
DEFAULT_MAX_RETRIES = 3

_replay_remote = ray.remote(run_replay_task)
_rescore_remote = ray.remote(run_rescore_task)


@dataclass(frozen=True, slots=True)
class RayOptions:
    """Where and how episodes run. ``address`` None starts a Ray instance on this machine
    (or joins the one ``RAY_ADDRESS`` names); ``"auto"`` joins the cluster this machine is
    part of; ``HOST:PORT`` or ``ray://HOST:PORT`` a given one."""

    address: str | None = None
    gpus_per_episode: float = 0.0
    cpus_per_episode: float = 1.0
    max_retries: int = DEFAULT_MAX_RETRIES
    num_cpus: int | None = None  # only for an instance started here (tests, benches)


@dataclass
class BatchReport:
    """Every task's report, and one line per episode that produced no scores."""

    reports: list[TaskReport] = field(default_factory=list)
    bad_input: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def incomplete(self) -> list[TaskReport]:
        return [r for r in self.reports if r.outcome is not None and not r.outcome.complete]


def connect(options: RayOptions) -> bool:
    """Join or start Ray; True when this call started it (the caller shuts it down)."""
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": False,
        "logging_level": "WARNING",
    }
    address = None if options.address in (None, "local") else options.address
    if address is None:
        kwargs["num_cpus"] = options.num_cpus
    try:
        ray.init(address=address, **kwargs)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BadInputError(f"--ray {options.address}", f"no Ray cluster there: {first}") from None
    return True


def check_gpus(options: RayOptions) -> None:
    """Tasks asking for more GPUs than the cluster has would wait forever: refuse at once."""
    if options.gpus_per_episode <= 0:
        return
    resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
    have = float(resources.get("GPU", 0.0))
    if have < options.gpus_per_episode:
        raise BadInputError(
            "--gpus-per-episode",
            f"{options.gpus_per_episode:g} GPU(s) per episode asked, the Ray cluster has {have:g}",
        )


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
    )


def _drain(
    pending: dict[Any, str],
    report: BatchReport,
    on_report: Callable[[TaskReport], None],
    console: Console,
    description: str,
    max_retries: int,
) -> None:
    """Collect tasks as they finish (any order) with a progress bar; one failed task never
    stops the others."""
    with _progress(console) as bar:
        bar_task = bar.add_task(description, total=len(pending))
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    name = pending.pop(ref)
                    try:
                        task_report: TaskReport = ray.get(ref)
                    except ray.exceptions.RayTaskError as exc:
                        cause = exc.cause if exc.cause is not None else exc
                        report.failures.append(f"{name}: {type(cause).__name__}: {cause}")
                    except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError):
                        report.failures.append(
                            f"{name}: its worker died {max_retries + 1} times (Ray retried it "
                            f"{max_retries} times)"
                        )
                    else:
                        report.reports.append(task_report)
                        if task_report.bad_input is not None:
                            report.bad_input.append(task_report.bad_input)
                        on_report(task_report)
                    bar.advance(bar_task)
        except KeyboardInterrupt:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise


def _options_for(remote: Any, options: RayOptions) -> Any:
    return remote.options(
        num_cpus=options.cpus_per_episode,
        num_gpus=options.gpus_per_episode,
        max_retries=options.max_retries,
        retry_exceptions=False,
    )


def run_replay_batch(
    tasks: Sequence[ReplayTask],
    config: PipelineConfig,
    options: RayOptions,
    observers: Sequence[EpisodeObserver] = (),
    *,
    resume: bool = True,
    console: Console | None = None,
) -> BatchReport:
    """Score every rollout on Ray; with ``resume`` an episode already scored complete under
    its results folder is skipped (a batch stopped half-way is run again with the same
    command). Observers hear ``on_end`` of each episode in the driver, in finishing order."""
    from streameval.scale.tasks import split_finished

    console = console or Console(stderr=True)
    report = BatchReport()
    if resume:
        to_run, finished = split_finished(tasks)
        report.skipped = [f"{t.results_dir}: scored before, skipped" for t in finished]
        for message in report.skipped:
            console.print(message, highlight=False, soft_wrap=True)
    else:
        to_run = list(tasks)
    started = connect(options)
    try:
        check_gpus(options)
        remote = _options_for(_replay_remote, options)
        pending = {remote.remote(task, config): task.episode for task in to_run}

        def tell(task_report: TaskReport) -> None:
            outcome = task_report.outcome
            if outcome is None:
                return
            state = "complete" if outcome.complete else "INCOMPLETE"
            console.print(
                f"■ {task_report.name}: {outcome.frames} frames, {state}, "
                f"{task_report.seconds:.1f} s on {task_report.worker}",
                highlight=False,
                soft_wrap=True,
            )
            for o in observers:
                o.on_end(outcome)

        _drain(pending, report, tell, console, "episodes", options.max_retries)
    finally:
        if started:
            ray.shutdown()
    return report


def run_rescore_batch(
    results_dirs: Sequence[Path], options: RayOptions, *, console: Console | None = None
) -> BatchReport:
    """``rescore`` of every results folder, one Ray task each."""
    console = console or Console(stderr=True)
    report = BatchReport()
    started = connect(options)
    try:
        remote = _options_for(_rescore_remote, options)
        pending = {remote.remote(d): str(d) for d in results_dirs}

        def tell(task_report: TaskReport) -> None:
            rescored = task_report.rescore
            if rescored is None:
                return
            what = (
                "unchanged" if not rescored.changed else "changed: " + ", ".join(rescored.changed)
            )
            print(f"rescored {rescored.results_dir} ({what})", file=sys.stdout, flush=True)

        _drain(pending, report, tell, console, "rescore", options.max_retries)
    finally:
        if started:
            ray.shutdown()
    return report
