"""The episodes of a command, as jobs: one builder per kind of source.

The command line and the Python API build their jobs here and nowhere else, so ``streameval
demo``/``attach``/``replay`` and ``streameval.evaluate`` run the same episodes, with the same
results folders, recorders and bad-input rules. Builders take plain values (never an
``argparse.Namespace``): each option has one name and one check.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from streameval.core.observers import EpisodeObserver
from streameval.errors import BadInputError
from streameval.protocol.memory_loop import MEMORY_LOOP_SUITE
from streameval.results.layout import episode_dir
from streameval.runs.jobs import EpisodeJob, JobsReport
from streameval.runs.memory_loop import LoopPlan, demo_loop_jobs, model_loop_jobs

if TYPE_CHECKING:
    from streameval.replay.rollout import Rollout
    from streameval.runs.attach_start import AttachStart
    from streameval.transports.urls import AttachOptions

RecordMode = Literal["lossless", "lossy", "off"]
RECORD_MODES: tuple[RecordMode, ...] = ("lossless", "lossy", "off")
WORLDMARK_SUITE = "worldmark"
ALL_ACTIONS = tuple(range(1, 16))  # the whole WorldMark suite
DEFAULT_SECONDS_PER_KEY = 20.0
ALL_LOOPS = LoopPlan()  # every memory_loop trajectory, 60 s each


def recorders(results_dir: Path, record: RecordMode) -> list[EpisodeObserver]:
    """The observers that keep a live episode's frames as ``recording/`` (none for "off")."""
    if record == "off":
        return []
    from streameval.engine.recording import RecordingObserver

    return [RecordingObserver(results_dir / "recording", lossy=record == "lossy")]


def episode_name(action: int, keys: Sequence[str]) -> str:
    """``009_WR``: a WorldMark episode is its action id and its keys."""
    return f"{action:03d}_{''.join(keys)}"


def _check_actions(actions: Sequence[int]) -> None:
    from streameval.protocol.suites import WORLDMARK

    bad = [a for a in actions if a not in WORLDMARK]
    if bad or not actions:
        raise BadInputError("actions", f"worldmark action ids are 1–15, got {list(actions)}")


def demo_jobs(
    out: Path,
    *,
    defect: str = "clean",
    seed: int = 0,
    actions: Sequence[int] = (9, 14, 12),
    seconds_per_key: float = DEFAULT_SECONDS_PER_KEY,
    suite: str = WORLDMARK_SUITE,
    loops: LoopPlan = ALL_LOOPS,
    record: RecordMode = "lossless",
) -> list[EpisodeJob]:
    """The procedural world (with ``defect`` injected), driven in process."""
    from streameval.protocol.schedule import Schedule
    from streameval.protocol.suites import worldmark_keys
    from streameval.transports.inprocess.driver import InProcessSource
    from streameval.worlds.procedural_world import ProceduralWorld, world_config_for_defect

    try:
        world_config = world_config_for_defect(defect, seed=seed)
    except ValueError as exc:
        raise BadInputError("--defect", str(exc)) from None
    name = f"procedural-world[{defect}]"
    if suite == MEMORY_LOOP_SUITE:
        return demo_loop_jobs(loops, out, world_config, name, lambda d: recorders(d, record))
    _check_actions(actions)
    jobs: list[EpisodeJob] = []
    for action in actions:
        keys = worldmark_keys(action)
        episode = episode_name(action, keys)

        def open_source(keys: tuple[str, ...] = keys, episode: str = episode) -> InProcessSource:
            world = ProceduralWorld(world_config)
            schedule = Schedule.per_key(keys, seconds_per_key, world.fps)
            return InProcessSource(
                world,
                schedule,
                episode=episode,
                model_name=name,
                suite=WORLDMARK_SUITE,
                width=world.width,
                height=world.height,
            )

        results_dir = episode_dir(out, name, episode)
        jobs.append(EpisodeJob(episode, open_source, results_dir, recorders(results_dir, record)))
    return jobs


def model_jobs(
    model: Any,
    name: str,
    out: Path,
    *,
    actions: Sequence[int] = ALL_ACTIONS,
    seconds_per_key: float = DEFAULT_SECONDS_PER_KEY,
    fps: float | None = None,
    record: RecordMode = "lossless",
    suite: str = WORLDMARK_SUITE,
    loops: LoopPlan = ALL_LOOPS,
    step_timeout: float | None = None,
    origin: str | None = None,
) -> list[EpisodeJob]:
    """One job per WorldMark action (or memory_loop trajectory) for an in-process ``model``
    (``step(key) -> frame``; optional ``reset()``, ``fps``, ``width``, ``height``:
    docs/evaluate-your-model.md). Model calls run in the model's own thread, bounded by
    ``step_timeout`` seconds; a model that hung once is not driven again (its thread may still
    be inside it). Bad input is named by ``origin`` (the URL the model came from), else by
    ``name``."""
    from streameval.inputs.numbers import check_frame_count
    from streameval.protocol.schedule import Schedule
    from streameval.protocol.suites import worldmark_keys
    from streameval.runs.python_model import model_fps, model_source_opener
    from streameval.transports.inprocess.driver import InProcessSource
    from streameval.transports.inprocess.model_thread import DEFAULT_STEP_TIMEOUT_S

    where = origin or name
    timeout = DEFAULT_STEP_TIMEOUT_S if step_timeout is None else step_timeout
    if suite == MEMORY_LOOP_SUITE:
        return model_loop_jobs(
            model,
            name,
            loops,
            out,
            lambda d: recorders(d, record),
            fps=fps,
            step_timeout=timeout,
            origin=where,
        )
    open_model = model_source_opener(model, name, step_timeout=timeout, origin=where)
    _check_actions(actions)
    rate = model_fps(model, fps, where)
    jobs: list[EpisodeJob] = []
    for action in actions:
        keys = worldmark_keys(action)
        episode = episode_name(action, keys)
        schedule = Schedule.per_key(keys, seconds_per_key, rate)
        check_frame_count(schedule.total_frames, "fps × seconds per key")

        def open_source(schedule: Schedule = schedule, episode: str = episode) -> InProcessSource:
            return open_model(schedule, episode=episode, suite=suite)

        results_dir = episode_dir(out, name, episode)
        jobs.append(EpisodeJob(episode, open_source, results_dir, recorders(results_dir, record)))
    return jobs


def rollout_jobs(
    paths: Sequence[Path],
    out: Path,
    report: JobsReport,
    *,
    fps: float | None = None,
    realtime: bool = False,
) -> list[EpisodeJob]:
    """One job per recorded rollout found under ``paths``, paced at ``fps`` (or each
    rollout's own rate with ``realtime``; flat out otherwise). Unreadable rollouts and
    unusable sidecars go to ``report`` (the others are still scored)."""
    from streameval.replay import ReplaySource, open_rollouts
    from streameval.scale.tasks import ReplayTask

    rollouts, errors = open_rollouts(list(paths))
    report.bad_input.extend(str(e) for e in errors)
    jobs: list[EpisodeJob] = []
    for rollout in rollouts:
        if rollout.sidecars is not None:  # scored without them; the metrics say why
            report.input_problems.extend(str(p) for p in rollout.sidecars.problems)
        pace = rollout.fps if realtime else fps

        def open_source(rollout: Rollout = rollout, pace: float | None = pace) -> ReplaySource:
            return ReplaySource(rollout, pace=pace)

        try:
            results_dir = rollout_results_dir(out, rollout)
        except BadInputError as exc:  # a link inside ``out`` leads elsewhere: this one only
            report.bad_input.append(str(exc))
            continue
        task = ReplayTask(rollout.episode, rollout.path, results_dir, pace)
        jobs.append(EpisodeJob(rollout.episode, open_source, results_dir, task=task))
    return jobs


def rollout_results_dir(out: Path, rollout: Rollout) -> Path:
    """Where a rollout's scores go: a benchmark case's recording (or a WorldMark delivery in
    a layout that names its set) to ``OUT/<model>/<set>/<case>/``, as the live run of the
    case; any other rollout to ``OUT/<model>/<episode>/``."""
    from streameval.cases.episode import case_record_of
    from streameval.results.layout import CaseName, case_dir

    case = case_record_of(rollout.meta)
    if case is not None:
        return case_dir(out, rollout.model, CaseName(case["set"], case["name"]))
    return episode_dir(out, rollout.model, rollout.episode)


def network_jobs(
    url: str,
    out: Path,
    options: AttachOptions,
    *,
    actions: Sequence[int] = ALL_ACTIONS,
    suite: str = WORLDMARK_SUITE,
    loops: LoopPlan = ALL_LOOPS,
    fps: float | None = None,
    model_name: str | None = None,
    record: RecordMode = "lossless",
    start: AttachStart | None = None,
    soak_minutes: float = 5.0,
) -> list[EpisodeJob]:
    """One job per episode for a model behind a network URL (webrtc, mjpeg, mqtt). The URL
    and options are checked once, before any episode starts. ``start``: every episode begins
    from it, sent as a case's start (``runs.attach_start``)."""
    from streameval.transports.urls import open_network_source

    open_network_source(url, ("W",), episode="check", suite=suite, options=options)
    model = model_name or network_model_name(url)
    episodes = network_episodes(
        options, actions=actions, suite=suite, loops=loops, fps=fps, soak_minutes=soak_minutes
    )
    jobs: list[EpisodeJob] = []
    for episode, keys, episode_options in episodes:

        def open_source(
            keys: tuple[str, ...] = keys,
            episode: str = episode,
            opts: AttachOptions = episode_options,
        ) -> Any:
            given = None if start is None else start.conditioning(episode, keys, suite)
            return open_network_source(
                url, keys, episode=episode, suite=suite, options=opts, conditioning=given,
                model=model_name,
            )  # fmt: skip

        results_dir = episode_dir(out, model, episode)
        jobs.append(EpisodeJob(episode, open_source, results_dir, recorders(results_dir, record)))
    return jobs


def network_episodes(
    options: AttachOptions,
    *,
    actions: Sequence[int] = ALL_ACTIONS,
    suite: str = WORLDMARK_SUITE,
    loops: LoopPlan = ALL_LOOPS,
    fps: float | None = None,
    soak_minutes: float = 5.0,
) -> list[tuple[str, tuple[str, ...], AttachOptions]]:
    """(episode, keys, options) per episode: worldmark actions, memory_loop trajectories
    (one key per token, each held for the token's share of the loop), or one soak of
    ``soak_minutes`` (keys cycled, 20 s each)."""
    from dataclasses import replace

    from streameval.protocol.suites import (
        SOAK_SUITE,
        WORLDMARK_SECONDS_PER_KEY,
        soak_keys,
        worldmark_keys,
    )
    from streameval.runs.memory_loop import loop_keys, memory_loops

    if suite == SOAK_SUITE:
        try:
            keys = soak_keys(soak_minutes)
        except ValueError as exc:
            raise BadInputError("--minutes", str(exc)) from None
        spk = replace(options, seconds_per_key=WORLDMARK_SECONDS_PER_KEY)
        return [(f"soak-{soak_minutes:g}min", keys, spk)]

    if suite == MEMORY_LOOP_SUITE:
        return [
            (loop.name, loop_keys(loop), replace(options, seconds_per_key=loop.token_seconds))
            for loop in memory_loops(loops, fps)
        ]
    _check_actions(actions)
    return [
        (episode_name(action, worldmark_keys(action)), worldmark_keys(action), options)
        for action in actions
    ]


def network_model_name(url: str) -> str:
    """The model name of a network URL without ``--model-name``: the MQTT session, the
    program of an ``exec:`` URL, or the server's host and port."""
    from urllib.parse import urlsplit

    if url.startswith("exec:"):
        from streameval.transports.exec.transport import program_name

        return program_name(url)
    parsed = urlsplit(url)
    if parsed.scheme.startswith("mqtt"):
        session = parsed.path.strip("/")
        if session:
            return session
    return (parsed.hostname or "remote") + (f"_{parsed.port}" if parsed.port else "")
