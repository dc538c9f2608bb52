"""streameval: a streaming, real-time evaluator for live world-model rollouts."""

__version__ = "0.1.0"
