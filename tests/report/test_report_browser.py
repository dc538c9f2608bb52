"""report.html and index.html open in a real headless browser (Chromium from Debian, installed by
.ci/run); the screenshot is not blank and shows the plots.

Plot presence is read from pixel colours only the figures draw: the bars (#0072B2) and the
segment shading of a W key (#0072B2 at 15 % on white ≈ (217, 234, 243)).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import cv2
import numpy as np
import pytest

from streameval.cli.main import main
from streameval.results.layout import episode_dir, path_component

# one worker runs the whole module: its fixture renders and replays once, not per worker
pytestmark = pytest.mark.xdist_group("report-browser")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium not installed (.ci/run installs it from Debian)"
)
BAR = (0, 114, 178)  # RGB
W_SHADE = (217, 234, 243)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reports")
    # the hiccup episode's report is the one photographed: 4 s a key leaves its Local Memory
    # bars visible (at 2 s they are too short to show); the clean one only has to be listed
    for defect, seconds in (("clean", "2"), ("hiccup", "4")):
        args = ["demo", "--no-tui", "-q", "--out", str(out), "--defect", defect]
        args += ["--actions", "8", "--seconds-per-key", seconds, "--cuts", "scenedetect-content"]
        assert main(args) == 0
    return out


def screenshot(page: Path, png: Path, height: int = 2400) -> np.ndarray:
    assert CHROMIUM is not None
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--window-size=1200,{height}",
            f"--screenshot={png}",
            page.resolve().as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    image = cv2.imread(str(png), cv2.IMREAD_COLOR)
    assert image is not None, f"no screenshot at {png}"
    return np.ascontiguousarray(image[:, :, ::-1])


def share_of(image: np.ndarray, rgb: tuple[int, int, int], tol: int = 6) -> float:
    close = np.all(np.abs(image.astype(np.int16) - np.array(rgb, np.int16)) <= tol, axis=2)
    return float(close.mean())


def test_run_writes_self_contained_reports_and_index(results: Path) -> None:
    reports = sorted(results.rglob("report.html"))
    assert len(reports) == 2
    index = (results / "index.html").read_text()
    for model in ("procedural-world[clean]", "procedural-world[hiccup]"):
        assert model in index  # the display name; the link goes to the shell-safe folder
        assert f"href='{path_component(model)}/008_AD/report.html'" in index
    for page in [results / "index.html", *reports]:
        text = page.read_text()
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", text), page
        assert "<script" not in text
        assert text.count("data:image/png;base64,") >= 1
    hiccup = (
        episode_dir(results, "procedural-world[hiccup]", "008_AD") / "report.html"
    ).read_text()
    assert "motion_stability_trans" in hiccup and "official" in hiccup
    assert hiccup.count("data:image/png;base64,") >= 3  # signals, local memory, revisit


@needs_chromium
def test_report_screenshot_is_not_blank_and_shows_the_plots(results: Path, tmp_path: Path) -> None:
    page = episode_dir(results, "procedural-world[hiccup]", "008_AD") / "report.html"
    image = screenshot(page, tmp_path / "report.png")
    assert image.std() > 20  # not a blank page
    # Local Memory's bars: drawn on the distance Local Memory reads (the CPU descriptor's wider
    # Local kernel, docs/methods.md#cpu-defaults-and-backends), where a clean turn's pair
    # distances are a few % of tau: about 100 bar pixels here, but never none
    assert share_of(image, BAR) > 0.000005
    # segment shading of the A/D keys (green and yellow at 15 % on white)
    assert share_of(image, (217, 240, 234)) + share_of(image, (253, 251, 228)) > 0.01


@needs_chromium
def test_index_screenshot_shows_the_table_and_the_bar_charts(results: Path, tmp_path: Path) -> None:
    image = screenshot(results / "index.html", tmp_path / "index.png", height=1600)
    assert image.std() > 20
    assert share_of(image, BAR) > 0.005
