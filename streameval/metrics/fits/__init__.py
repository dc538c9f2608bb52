"""Scoring-time fits beside the metric kernels: the motion-type fit (SPEC §3) and the Global
Memory view plan and geometry (SPEC §5).

No OpenCV and no perception import: perception produces samples (``FitSample``,
``FrameGeometry``) at the frames planned here; ``rescore``, the leaderboard and the cache use
this layer without touching video.
"""
