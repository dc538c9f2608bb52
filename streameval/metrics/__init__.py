"""Metric kernels (pure functions over numpy arrays) and their online accumulators."""
