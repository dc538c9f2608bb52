"""Whether an episode folder that already holds results is run, skipped or kept.

``apply_existing_policy`` is the only place that decides it, for the command line and the
Python API alike.
"""

from __future__ import annotations

from streameval.results.layout import ExistingPolicy, clear_episode_dir, decide
from streameval.runs.jobs import EpisodeJob


def apply_existing_policy(
    jobs: list[EpisodeJob], policy: ExistingPolicy
) -> tuple[list[EpisodeJob], list[str], list[str]]:
    """(jobs to run, skipped notes, kept errors). Folders of jobs to run are cleared first
    when they hold a former run, so nothing stale survives beside the new results."""
    decision = decide([job.results_dir for job in jobs], policy)
    to_run = set(decision.run)
    runnable = [job for job in jobs if job.results_dir in to_run]
    for job in runnable:
        clear_episode_dir(job.results_dir)
    return runnable, decision.skipped, decision.kept
