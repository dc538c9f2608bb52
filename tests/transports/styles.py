"""The served styles of the field, each with its test server and how ``attach`` reaches it:
one table for the per-style tests (``test_styles.py``) and the benchmark."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from streameval.core.observers import EpisodeOutcome
from streameval.engine.config import PipelineConfig
from streameval.engine.pipeline import run_episode
from streameval.transports.urls import AttachOptions, open_network_source
from tests.transports.keycode_server import start_keycode_server
from tests.transports.press_servers import gamecraft_app, press_app
from tests.transports.watchdog import watchdog
from tests.transports.worlds import CONFIG, world
from tests.transports.ws_servers import camera_app, start, worldfoundry_app

Starter = Callable[..., Awaitable[tuple[Any, int]]]


async def _app(make: Callable[..., Any], **kw: Any) -> tuple[Any, int]:
    return await start(make(world(), **kw))


@dataclass(frozen=True)
class Style:
    profile: str
    start: Starter
    url: str  # with {port}
    keys_url: str | None = None


STYLES: dict[str, Style] = {
    "worldfoundry": Style(
        "worldfoundry",
        lambda **kw: _app(worldfoundry_app, **kw),
        "ws://127.0.0.1:{port}/api/realtime/ws",
    ),
    "keycode": Style(
        "keycode",
        lambda **kw: start_keycode_server(world(), **kw),
        "webrtc+http://127.0.0.1:{port}/offer/game/1",
    ),
    "press": Style(
        "press",
        lambda **kw: _app(press_app, **kw),
        "mjpeg+http://127.0.0.1:{port}/stream",
        "ws://127.0.0.1:{port}/ws",
    ),
    "gamecraft": Style(
        "gamecraft",
        lambda **kw: _app(gamecraft_app, **kw),
        "mjpeg+http://127.0.0.1:{port}/video/0",
        "http://127.0.0.1:{port}/control/0",
    ),
    "camera-pose": Style(
        "camera-pose",
        lambda **kw: _app(camera_app, **kw),
        "ws://127.0.0.1:{port}/v1/realtime/world/camera",
    ),
}


async def attach_style(
    name: str,
    keys: tuple[str, ...],
    seconds_per_key: float,
    *,
    profile: str | None = None,
    observers: list[Any] | None = None,
    results_dir: Any = None,
    config: PipelineConfig = CONFIG,
    **server: Any,
) -> EpisodeOutcome:
    style = STYLES[name]
    runner, port = await style.start(**server)
    try:
        source = open_network_source(
            style.url.format(port=port),
            keys,
            episode=name,
            suite="test",
            options=AttachOptions(
                clock=None,
                seconds_per_key=seconds_per_key,
                profile=profile or style.profile,
                keys_url=style.keys_url.format(port=port) if style.keys_url else None,
                no_frame_timeout_s=8.0,
            ),
        )
        await source.connect()
        dog = asyncio.create_task(watchdog(asyncio.current_task()))
        try:
            return await run_episode(
                source, config=config, observers=observers, results_dir=results_dir
            )
        finally:
            dog.cancel()
    finally:
        await runner.cleanup()
