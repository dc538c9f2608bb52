"""The perception backends a ``PipelineConfig`` names, created one kind at a time.

One place that turns the config's strings into backends: ``run_episode`` creates them before
anything runs (an unknown or unavailable backend is the caller's error, not a crash inside the
task group), and ``streameval doctor`` creates each the same way to say, kind by kind, what is
missing and how to get it (the backends' own errors name the file or cache and the command).
"""

from __future__ import annotations

from typing import Any, Literal

from streameval.constants import DEFAULT_FPS
from streameval.core.registry import split_spec
from streameval.engine.config import PipelineConfig

BackendKind = Literal["flow", "embedding", "cuts", "depth", "quality", "gram"]
BACKEND_KINDS: tuple[BackendKind, ...] = ("flow", "embedding", "cuts", "depth", "quality", "gram")


def backend_spec(kind: BackendKind, config: PipelineConfig) -> str | None:
    """The config's spec for ``kind`` (None: that job is off)."""
    spec: str | None = getattr(config, kind)
    return spec or None


def create_backend(kind: BackendKind, config: PipelineConfig, fps: float = DEFAULT_FPS) -> Any:
    """The backend ``config`` names for ``kind``, or None when that job is off. The cut
    detector is only resolved (it is made per episode, at the episode's fps) unless ``fps`` is
    given for a check that builds it."""
    spec = backend_spec(kind, config)
    if spec is None:
        return None
    if kind == "flow":
        from streameval.perception.flow import create_flow_backend

        return create_flow_backend(spec)
    if kind == "quality":
        from streameval.perception.qalign import load_quality_backend

        return load_quality_backend(spec)
    if kind == "cuts":
        from streameval.perception.memory import create_episode_cut_detector

        return create_episode_cut_detector(spec, fps)
    name, kwargs = split_spec(spec)
    if kind == "embedding":
        from streameval.perception.embedding import create_embedding_backend

        return create_embedding_backend(name, **kwargs)
    if kind == "depth":
        from streameval.perception.depth import create_depth_backend

        return create_depth_backend(name, **kwargs)
    from streameval.perception.gram import create_gram_backend

    return create_gram_backend(name, **kwargs)
