"""``rescore``: recompute every score from the episode cache, without touching the video."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from streameval.cache import EpisodeCache
from streameval.episode_scores import episode_document, score_episode
from streameval.errors import BadInputError
from streameval.scores_file import write_scores


@dataclass(frozen=True, slots=True)
class RescoreOutcome:
    results_dir: Path
    changed: list[str]  # metric names whose value differs from the scores.json found


def find_results_dirs(path: Path) -> list[Path]:
    """``path`` itself if it holds a cache, else every results dir below it (sorted)."""
    if (path / "cache" / "episode.json").is_file():
        return [path]
    if not path.is_dir():
        raise BadInputError(path, "no such results directory")
    found = sorted(p.parent.parent for p in path.rglob("cache/episode.json"))
    if not found:
        raise BadInputError(path, "no episode cache (cache/episode.json) found below it")
    return found


def rescore_dir(results_dir: Path) -> RescoreOutcome:
    """Re-run the kernels on ``results_dir/cache`` and rewrite ``scores.json``."""
    cache = EpisodeCache.load(results_dir / "cache")
    scores = score_episode(cache)
    doc = episode_document(cache.meta, scores, len(cache.frame_keys))
    old_path = results_dir / "scores.json"
    changed: list[str] = []
    if old_path.is_file():
        try:
            old = json.loads(old_path.read_text()).get("metrics", {})
        except json.JSONDecodeError:
            old = {}
        changed = [k for k, v in doc["metrics"].items() if old.get(k) != v]
    write_scores(results_dir, doc)
    return RescoreOutcome(results_dir, changed)
