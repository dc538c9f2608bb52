"""Shared fixtures: offline hub, and short procedural-world episodes."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
