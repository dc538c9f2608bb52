"""MJPEG over HTTP with ``--keys-url``, against a plain aiohttp server."""

from __future__ import annotations

import asyncio

from streameval.observers import EpisodeOutcome
from streameval.pipeline import run_episode
from streameval.transports.urls import AttachOptions, open_network_source
from tests.transports.mjpeg_server import start_mjpeg_server
from tests.transports.worlds import CONFIG


async def _attach(corrupt_every: int = 0) -> EpisodeOutcome:
    runner, port = await start_mjpeg_server(corrupt_every=corrupt_every)
    try:
        source = open_network_source(
            f"mjpeg+http://127.0.0.1:{port}/video_feed",
            # forward/back: a zoom, unambiguous for any camera model (a flat pan is a turn
            # to the strafe/turn fit, so A/D would test that fit instead of the transport)
            ("W", "S"),
            episode="mjpeg",
            suite="test",
            options=AttachOptions(
                clock=None, seconds_per_key=2.0, keys_url=f"http://127.0.0.1:{port}/keys"
            ),
        )
        await source.connect()
        return await run_episode(source, config=CONFIG)
    finally:
        await runner.cleanup()


def test_mjpeg_stream_with_keys_url_is_scored() -> None:
    outcome = asyncio.run(_attach())
    inter = outcome.interactivity
    accuracy = outcome.scores.metrics["direction_accuracy_trans"].normalized
    assert outcome.complete, outcome.errors
    assert inter["transport"] == "mjpeg" and inter["clock"] == "wall"
    assert inter["alignment"] == "inferred"
    assert accuracy is not None and accuracy > 80
    assert outcome.frames >= 40  # ~64 at 16 fps over 4 s


def test_jpeg_parts_that_do_not_decode_are_counted_and_skipped() -> None:
    outcome = asyncio.run(_attach(corrupt_every=10))
    inter = outcome.interactivity
    assert outcome.complete, outcome.errors
    assert inter["malformed"] >= 4
    assert any("does not decode" in str(e) for e in outcome.errors)
    accuracy = outcome.scores.metrics["direction_accuracy_trans"].normalized
    assert accuracy is not None and accuracy > 80
