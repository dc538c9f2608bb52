"""Progress on long --no-tui work with rich's bars (episode i/N, frames, ETA)."""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path

from rich.console import Console

from streameval.cli.console import ProgressBars
from streameval.engine.config import PipelineConfig
from streameval.runs.builders import model_jobs
from streameval.runs.jobs import run_jobs
from tests.test_api import Slider

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def test_bars_show_episodes_frames_and_eta_and_the_scores(tmp_path: Path) -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=120)
    jobs = model_jobs(Slider(), "slider", tmp_path, actions=[8, 6], seconds_per_key=2, record="off")
    config = PipelineConfig(cuts="scenedetect-content")
    with ProgressBars(len(jobs), console=console) as bars:
        report = asyncio.run(run_jobs(jobs, config, [bars]))
    assert len(report.outcomes) == 2
    text = ANSI.sub("", buffer.getvalue())
    assert "episodes" in text and "2/2" in text and "ETA" in text
    assert "008_AD" in text and "64/64" in text  # 2 keys × 2 s × 16 fps
    assert "direction_accuracy_trans" in text  # the score table still prints, above the bars


def test_the_console_shows_each_metric_on_its_scale() -> None:
    """WorldAtlas's [0, 1] metrics with 4 decimals, WorldMark's 0–100 with 2 (as the table)."""
    from streameval.cli.console import format_metric
    from streameval.core.metric_result import MetricResult

    gate = MetricResult(raw=0.845, normalized=0.845, status="official")
    acc = MetricResult(raw=97.2, normalized=97.2, status="official")
    assert format_metric(gate, "memory_return_gate").strip() == "0.8450"
    assert format_metric(acc, "direction_accuracy_trans").strip() == "97.20"
