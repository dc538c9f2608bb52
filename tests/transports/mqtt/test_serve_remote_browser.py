"""``streameval dashboard --mqtt URL --serve HOST:PORT``: a remote case run watched in a web
browser shows what a local dashboard shows — the case set's progress and the column bands."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from streameval.protocol.schedule import Schedule

from streameval.core.episode.scores import EpisodeScores
from streameval.core.events import EpisodeInfo
from streameval.core.observers import EpisodeOutcome
from streameval.transports.mqtt.scores_publisher import MqttScoresPublisher
from tests.transports.conftest import Broker
from tests.tui.browser import needs_browser, needs_textual_serve, served_page
from tests.tui.case_sample import ACC, RUN, case_metrics, make_case, write_case_run
from tests.tui.tui_fakes import async_test

pytestmark = pytest.mark.xdist_group("dashboard-browser")


async def _publish_cases(url: str, model_dir: Path) -> None:
    """Three cases of the sample run as an evaluator's publisher sees them (their results
    beside the run's cases.json, so the messages carry the run's set sizes)."""
    publisher = MqttScoresPublisher(url)
    for set_name, name, accuracy in [r for r in RUN if r[2] is not None][:3]:
        info = EpisodeInfo(
            name,
            "m",
            "worldmark",
            16.0,
            Schedule.per_key(("W",), 2.0, 16.0),
            "test",
            extra={"case": make_case(set_name, name).record()},
        )
        publisher.on_start(info)
        scores = EpisodeScores(case_metrics(accuracy or 0.0), {})
        publisher.on_end(EpisodeOutcome(info, scores, model_dir / set_name / name, True, 32))
        await asyncio.sleep(0.05)
    await publisher.close()


@needs_browser
@needs_textual_serve
@async_test
async def test_a_remote_case_run_in_the_browser(broker: Broker, tmp_path: Path) -> None:
    path = write_case_run(tmp_path / "results", RUN[:1])  # cases.json: the run's set sizes
    url = broker.url("s")
    async with served_page(["--mqtt", url], tmp_path / "profile") as page:
        await page.wait_for(["Episodes", "0/0 finished"])
        await asyncio.sleep(1.0)  # the served dashboard subscribes after its first paint
        await _publish_cases(url, path.parent)
        await page.wait_for(["cases 3/7"])  # the live view's status line
        await page.press("c")
        text = await page.wait_for(["Columns over the whole case set", "after 3 of 7"])
        assert f"{ACC} 66.7 [" in text
