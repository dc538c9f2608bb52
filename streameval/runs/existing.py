"""Applying the existing-results policy (keep, overwrite, resume) to a command's jobs.

The command line and the Python API both call ``apply_existing_policy``. It sorts the jobs'
folders with ``layout.decide`` (which asks ``results.episode_state`` whether each holds a former
run and whether that run finished) and clears the folders of the jobs to run with
``episode_state.clear_episode`` -- the answers a Ray batch and a pool member use as well.
"""

from __future__ import annotations

from streameval.results.episode_state import clear_episode
from streameval.results.layout import ExistingPolicy, decide
from streameval.runs.jobs import EpisodeJob


def apply_existing_policy(
    jobs: list[EpisodeJob], policy: ExistingPolicy
) -> tuple[list[EpisodeJob], list[str], list[str]]:
    """(jobs to run, skipped notes, kept errors). Folders of jobs to run are cleared first
    when they hold a former run, so nothing stale survives beside the new results; a replay
    of the folder's own recording keeps that recording (it is the job's input)."""
    decision = decide([job.results_dir for job in jobs], policy)
    to_run = set(decision.run)
    runnable = [job for job in jobs if job.results_dir in to_run]
    for job in runnable:
        clear_episode(job.results_dir, replaying=job.task.rollout if job.task else None)
    return runnable, decision.skipped, decision.kept
