"""Issue 13: progress on long --no-tui work with rich's bars (episode i/N, frames, ETA)."""

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
