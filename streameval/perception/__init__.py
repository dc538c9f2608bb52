"""Perception: from frames to per-frame signals and motion-type samples (perceive once)."""
