"""The index's bar charts draw each column on its own scale: a WorldAtlas column in [0, 1]
beside WorldMark's 0–100 (on a 0–100 axis a 0.84 gate was an empty bar)."""

from __future__ import annotations

from typing import Any

import pytest

from streameval.report import plots


def test_each_column_is_drawn_on_its_scale(monkeypatch: pytest.MonkeyPatch) -> None:
    figures: list[Any] = []
    monkeypatch.setattr(plots, "to_png", lambda fig: figures.append(fig) or b"")
    plots.index_figure(["a", "b"], [("acc", [90.0, 40.0], 100.0), ("gate", [0.84, None], 1.0)])
    (fig,) = figures
    limits = [ax.get_xlim() for ax in fig.axes[:2]]
    assert limits == [(0.0, 100.0), (0.0, 1.0)]
