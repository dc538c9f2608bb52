"""Past one machine (docs/architecture.md#scale): batch replay/rescore on Ray, live sessions through
the broker.

Nothing here imports Ray at package import: ``streameval.scale.tasks`` holds the picklable
per-episode work (plain Python, run the same way by a Ray worker and by a test), and only
``streameval.scale.ray_batch`` imports Ray, when a command is given ``--ray``.
"""
