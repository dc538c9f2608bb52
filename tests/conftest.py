"""Shared fixtures: offline hub, and short procedural-world episodes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def tiny_depth_anything(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny randomly initialised Depth-Anything saved like a real checkpoint, so the tests
    exercise the real loading path (a local directory, HF_HUB_OFFLINE=1)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    backbone = transformers.Dinov2Config(
        hidden_size=32,
        num_hidden_layers=4,
        num_attention_heads=2,
        intermediate_size=64,
        patch_size=14,
        image_size=56,
        out_indices=[1, 2, 3, 4],
        reshape_hidden_states=False,
    )
    config = transformers.DepthAnythingConfig(
        backbone_config=backbone,
        reassemble_hidden_size=32,
        neck_hidden_sizes=[8, 16, 32, 32],
        fusion_hidden_size=16,
        head_hidden_size=8,
    )
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("depth-anything-tiny")
    transformers.DepthAnythingForDepthEstimation(config).save_pretrained(path)
    return path
