"""Scoring-time fits beside the metric kernels: the motion-type fit
(docs/methods.md#motion-type-fit) and the Global Memory view plan and geometry
(docs/methods.md#global_memory).

No OpenCV and no perception import: perception produces samples (``FitSample``,
``FrameGeometry``) at the frames planned here; ``rescore``, the leaderboard and the cache use
this layer without touching video.
"""
