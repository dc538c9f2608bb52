"""Deterministic sample data for the dashboard: SVG snapshot tests and the docs screenshots.

Everything is computed from a seed — no wall clock, no perception — so a screenshot of the
same state is byte-identical run after run. The data is shaped like a real run of a model
with a small response latency: after each key switch the flow keeps the old sign for a few
frames (red bars under the schedule), then follows the key (green).

Feeding goes through a real ``DashboardObserver``, so the snapshots exercise the same message
path as a live run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from streameval.protocol.keys import FAMILY, channel_of, expected_sign
from streameval.protocol.schedule import Schedule
from streameval.tui.app import DashboardApp, DashboardOptions
from streameval.tui.messages import PipelineFinished
from streameval.tui.observer import DashboardObserver

from streameval.core.episode.scores import EpisodeScores
from streameval.core.events import EpisodeInfo, ErrorEvent
from streameval.core.metric_result import MetricResult
from streameval.core.observers import EpisodeOutcome, Progress
from streameval.core.source import Source
from streameval.engine.config import PipelineConfig
from streameval.errors import BadInputError
from streameval.leaderboard import INCLUDE_ALL
from streameval.metrics.control.kernels import CONTROL_METRIC_NAMES
from streameval.results.layout import episode_dir
from streameval.results.scores_file import scores_document, write_scores
from streameval.runs.jobs import EpisodeJob, JobsReport

SAMPLE_MODEL = "procedural-world[delay]"
SAMPLE_SUITE = "worldmark"
SAMPLE_KEYS = ("W", "A", "D", "L", "R")
SAMPLE_FPS = 16.0
SAMPLE_SECONDS_PER_KEY = 4.0
SAMPLE_EPISODES = ("101_WADLR", "102_WADLR", "103_WADLR")
LATENCY_FRAMES = 5
QUEUE_SIZE = 32


def sample_schedule() -> Schedule:
    return Schedule.per_key(SAMPLE_KEYS, SAMPLE_SECONDS_PER_KEY, SAMPLE_FPS)


def sample_info(episode: str) -> EpisodeInfo:
    return EpisodeInfo(
        episode=episode,
        model=SAMPLE_MODEL,
        suite=SAMPLE_SUITE,
        fps=SAMPLE_FPS,
        schedule=sample_schedule(),
        source=f"python:{SAMPLE_MODEL}",
        width=640,
        height=432,
    )


def sample_signals(seed: int = 0) -> tuple[list[float], list[float], list[str]]:
    """Sx, Srad and the key of every frame of the sample schedule (first 2 frames NaN: the
    flow stride)."""
    rng = np.random.default_rng(seed)
    keys = sample_schedule().frame_keys()
    sx: list[float] = []
    srad: list[float] = []
    previous = {"sx": 0.0, "srad": 0.0}
    target = {"sx": 0.0, "srad": 0.0}
    switch = 0
    for i, key in enumerate(keys):
        if i and key != keys[i - 1]:
            switch = i
        lag = i - switch < LATENCY_FRAMES and i >= LATENCY_FRAMES
        amplitude = 0.9 if FAMILY[key] == "yaw" else 0.6
        wanted = {"sx": 0.0, "srad": 0.0}
        wanted[channel_of(key)] = expected_sign(key) * amplitude
        if not lag:
            target = wanted
            previous = wanted
        current = previous if lag else target
        sx.append(current["sx"] + float(rng.normal(0, 0.05)))
        srad.append(current["srad"] + float(rng.normal(0, 0.03)))
    sx[:2] = [float("nan")] * 2
    srad[:2] = [float("nan")] * 2
    return sx, srad, keys


def _official(normalized: float, *, provisional: bool = False) -> MetricResult:
    return MetricResult.official(normalized / 100.0, normalized, {"provisional": provisional})


def sample_control_metrics(progress: float, *, provisional: bool) -> dict[str, MetricResult]:
    """Control metrics that settle as the episode goes on (``progress`` in [0, 1])."""
    wobble = (1.0 - progress) * 3.0
    values = {
        "direction_accuracy_trans": 91.37 - wobble,
        "direction_accuracy_rot": 88.62 + wobble,
        "direction_purity_trans": 84.05 - wobble,
        "direction_purity_rot": 80.91,
        "motion_stability_trans": 96.40,
        "motion_stability_rot": 93.18 - wobble,
        "response_latency_trans": 71.25 + wobble,
        "response_latency_rot": 68.80,
    }
    out = {name: _official(values[name], provisional=provisional) for name in values}
    if progress < 0.55:  # no yaw segment scored yet
        for name in ("direction_accuracy_rot", "direction_purity_rot", "motion_stability_rot"):
            out[name] = MetricResult.not_applicable("no yaw segment scored yet")
        out["response_latency_rot"] = MetricResult.not_applicable(
            "no key switch into a yaw segment yet"
        )
    return {name: out[name] for name in CONTROL_METRIC_NAMES}


def sample_final_metrics() -> dict[str, MetricResult]:
    """The final scores: control metrics plus the memory metrics of episode end."""
    metrics = sample_control_metrics(1.0, provisional=False)
    metrics["local_memory"] = MetricResult.official(0.874, 87.40)
    metrics["revisit_memory"] = MetricResult.not_applicable(
        "no revisit in this schedule (no return to a seen place)"
    )
    metrics["global_memory"] = MetricResult.missing("embedding backend not configured")
    return metrics


def sample_outcome(episode: str, frames: int, complete: bool = True) -> EpisodeOutcome:
    video_s = frames / SAMPLE_FPS
    return EpisodeOutcome(
        info=sample_info(episode),
        scores=EpisodeScores(sample_final_metrics(), {}),
        results_dir=None,
        complete=complete,
        frames=frames,
        interactivity={
            "frames_received": frames,
            "frames_dropped": 0,
            "realtime_factor": 2.4,
            "video_seconds": video_s,
        },
    )


def feed_episode(
    observer: DashboardObserver,
    episode: str,
    *,
    until: int | None = None,
    end: bool = True,
    seed: int = 0,
) -> None:
    """Play the sample episode into ``observer``: start, a progress per frame (provisional
    scores every 8 frames) up to ``until`` (default: all), then the final outcome if ``end``."""
    info = sample_info(episode)
    sx, srad, keys = sample_signals(seed)
    total = len(keys)
    stop = total if until is None else min(until, total)
    observer.on_start(info)
    for i in range(stop):
        provisional = None
        if i % 8 == 7 or i == stop - 1:
            provisional = sample_control_metrics((i + 1) / total, provisional=True)
        observer.trace.frames_received += 1
        observer.on_progress(
            Progress(
                info=info,
                frame=i,
                key=keys[i],
                sx=None if np.isnan(sx[i]) else sx[i],
                srad=None if np.isnan(srad[i]) else srad[i],
                frames_done=i + 1,
                frames_total=total,
                fps=37.5,
                queue_depth=min(QUEUE_SIZE, 3 + i % 5),
                dropped=0,
                provisional=provisional,
            )
        )
    if end:
        observer.on_end(sample_outcome(episode, stop, complete=stop == total))


# --------------------------------------------------------------------------------------------
# Leaderboard sample: scores.json files of several models
# --------------------------------------------------------------------------------------------

LEADERBOARD_MODELS: dict[str, float] = {
    "matrix-game-2": 0.86,
    "hunyuan-gamecraft": 0.78,
    "yume": 0.64,
    "procedural-world[clean]": 0.97,
}


def _segments(keys: tuple[str, ...], level: float, pool: str, signed: bool) -> list[dict[str, Any]]:
    bounds = sample_schedule().boundaries
    out: list[dict[str, Any]] = []
    for j, key in enumerate(keys):
        family = FAMILY[key]
        in_pool = (family == "yaw") == (pool == "rot")
        value = level - 0.02 * j if in_pool else None
        out.append(
            {
                "index": j,
                "key": key,
                "family": family,
                "start_frame": bounds[j],
                "end_frame": bounds[j + 1],
                "status": "scored" if in_pool else "not_applicable",
                "value": (2 * value - 1 if signed else value) if value is not None else None,
                "reason": None if in_pool else f"not a {pool} segment",
            }
        )
    return out


def sample_scores_document(
    model: str, episode: str, level: float, *, memory: bool = True, quality: float | None = None
) -> dict[str, Any]:
    """A ``streameval.scores/1`` document with segment details for the drill-down.

    ``memory`` False: ``local_memory`` is missing (a partial cell); ``quality``: a perceptual
    quality value (else the column is absent, i.e. missing).
    """
    metrics: dict[str, MetricResult] = {}
    for name in CONTROL_METRIC_NAMES:
        pool = name.rsplit("_", 1)[1]
        signed = name.startswith("direction_accuracy")
        segments = _segments(SAMPLE_KEYS, level, pool, signed)
        scored = [s["value"] for s in segments if s["status"] == "scored"]
        raw = sum(scored) / len(scored)
        normalized = 100 * max(0.0, raw) if signed else 100 * raw
        metrics[name] = MetricResult.official(raw, normalized, {"segments": segments})
    if memory:
        metrics["local_memory"] = MetricResult.official(level, 100 * level)
    else:
        metrics["local_memory"] = MetricResult.missing("episode cut short before the memory probe")
    metrics["revisit_memory"] = MetricResult.not_applicable("no revisit in this schedule")
    if quality is not None:
        metrics["perceptual_quality"] = MetricResult.official(quality / 100, quality)
    return scores_document(
        model=model,
        suite=SAMPLE_SUITE,
        episode=episode,
        fps=SAMPLE_FPS,
        frames=sample_schedule().total_frames,
        metrics=metrics,
    )


def write_sample_results(root: Path) -> Path:
    """Write ``root/<model>/<episode>/scores.json`` for the sample models (the folders as a
    run names them: ``episode_dir``); returns ``root``.

    One model lacks local memory in one episode (a partial cell with its coverage), and the
    perceptual-quality column is measured for three models of four.
    """
    for m, (model, level) in enumerate(LEADERBOARD_MODELS.items()):
        for e, episode in enumerate(SAMPLE_EPISODES):
            doc = sample_scores_document(
                model,
                episode,
                level - 0.03 * e + 0.001 * m,
                memory=not (model == "yume" and e == 2),
                quality=None if model.startswith("procedural") else 40 + 40 * level - e,
            )
            write_scores(episode_dir(root, model, episode), doc)
    return root


# --------------------------------------------------------------------------------------------
# Whole dashboard states (snapshot tests and docs screenshots)
# --------------------------------------------------------------------------------------------

SAMPLE_ERROR = f"python:{SAMPLE_MODEL}: frame 143 arrived 2.1 s late (model step over budget)"


def sample_app(leaderboard_root: Path | None = None) -> DashboardApp:
    """A dashboard over the three sample jobs, fed by hand: no pipeline, a clock that never
    moves (so "last frame … ago" is constant) and the sample leaderboard if given."""
    jobs = [EpisodeJob(name, _no_source, Path(name)) for name in SAMPLE_EPISODES]
    options = DashboardOptions(
        autostart=False,
        clock=lambda: 0.0,
        leaderboard_dirs=(leaderboard_root,) if leaderboard_root is not None else (),
        # sample data: three episodes per model, all of them ranked to show the colours
        exclusion=INCLUDE_ALL,
    )
    return DashboardApp(jobs, PipelineConfig(queue_size=QUEUE_SIZE), [], options)


def _no_source() -> Source:
    raise BadInputError("sample", "the sample dashboard is fed by hand")


def feed_mid_episode(app: DashboardApp) -> None:
    """Episode 1 finished, episode 2 at frame 200 of 320 with one error, episode 3 queued."""
    feed_episode(app.observer_for(0), SAMPLE_EPISODES[0])
    running = app.observer_for(1)
    feed_episode(running, SAMPLE_EPISODES[1], until=200, end=False)
    running.on_error(ErrorEvent(SAMPLE_ERROR))


def feed_all_done(app: DashboardApp) -> None:
    """All three episodes finished; the pipeline reported the end of the run."""
    report = JobsReport()
    for job, episode in enumerate(SAMPLE_EPISODES):
        observer = app.observer_for(job)
        feed_episode(observer, episode, seed=job)
        if observer.outcome is not None:
            report.outcomes.append(observer.outcome)
    app.post_message(PipelineFinished(report, stopped=False))
