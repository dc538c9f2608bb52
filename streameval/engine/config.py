"""How an episode is perceived and reported: the one options object of the engine.

Kept apart from ``pipeline.py`` so that building jobs, the Python API and the command line can
name a configuration without importing the pipeline and its perception backends (OpenCV).
"""

from __future__ import annotations

from dataclasses import dataclass

from streameval.constants import ANALYSIS_HEIGHT, ANALYSIS_WIDTH, REALTIME_TARGET_FPS


@dataclass(frozen=True)
class PipelineConfig:
    """How an episode is perceived and reported."""

    # flow backend (registry: streameval.perception.flow): dis-fast, raft[:FILE], sea-raft:DIR
    flow: str = "dis-fast"
    queue_size: int = 32  # frames between reader and perceiver
    provisional_every_s: float = 0.5  # wall seconds between provisional score updates
    analysis_width: int = ANALYSIS_WIDTH
    analysis_height: int = ANALYSIS_HEIGHT
    # memory perception (docs/methods.md#memory-metrics); None switches a job off (its
    # metrics are then `missing`)
    embedding: str | None = "cpu-colorhist-rbf"  # or "dinov2-base" (weights: local/HF cache)
    cuts: str | None = "auto"  # TransNetV2 when installed, else PySceneDetect adaptive
    # depth network for the motion-type fit when frames come without depth
    # (docs/methods.md#motion-type-fit);
    # None = the depth-free estimator. e.g. "depth-anything" (weights: local/HF cache)
    depth: str | None = None
    # OpenCV's own thread pool: 1 leaves the second core to the decoder/model thread. Its
    # workers spin while they wait, so with a busy neighbour DIS ran 38–64 frames/s on 2
    # threads against 224–273 on 1 (bench/throughput.py). None keeps OpenCV's default.
    opencv_threads: int | None = 1
    # Q-Align at episode end ("qalign" or "qalign:DIR", weights local/HF cache); None = the
    # quality columns are not_applicable (docs/methods.md#perceptual_quality). Its 1-fps frames
    # are cached either way.
    quality: str | None = None
    imaging: bool = True  # CPU imaging statistics (sharpness, noise, exposure, flicker, ...)
    # Q-Align's 1-fps frames, kept (≈ 400 kB per second of video in memory, 210 KiB as PNG in
    # the cache) so that `rescore --quality` needs no video; False keeps memory flat
    quality_frames: bool = True
    # Gram texture backend of memory_rendering_recovery (memory_loop only; registry
    # streameval.perception.gram): the CPU filter bank, or "vgg16-gram[:CHECKPOINT]" with
    # torchvision's weights in the torch hub cache; None = the two CIELAB terms alone
    gram: str | None = "cpu-filterbank-gram"
    # WorldAtlas's action-response budget in seconds (--latency-budget): the latency's
    # normalisation and the pass rate's bar (docs/methods.md#latency_budget_pass_rate); kept in
    # the provenance's config, so `rescore` scores the cache against the same budget
    latency_budget_s: float = 1.0
    # the real-time verdict's target in native fps (scores.json runtime, --realtime-target);
    # kept in the provenance's config, so `rescore` judges the cache against the same target
    realtime_target_fps: float = REALTIME_TARGET_FPS
