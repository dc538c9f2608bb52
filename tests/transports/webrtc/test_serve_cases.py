"""``serve --webrtc`` with benchmark cases: the built-in ``serve`` profile sends each case's
image (inline, base64) and caption in a ``configure`` on the key channel; the served model's
``reset`` receives them by the names it takes, and the episode starts from the case image. A
served model whose ``reset`` takes no image answers the configure with an error: that case
ends incomplete in the server's words. Our own protocol over WebRTC (``--lossless``) carries
no image: attach refuses such cases before anything runs, with one line (over MQTT the start
rides on the ``reset``: ``tests/scale/test_pool_cases.py``)."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from streameval.cases import HONOURED_SIMILARITY, load_cases
from streameval.cases.images import load_image
from streameval.errors import BadInputError, StartRefused
from streameval.transports.host import start_arguments
from streameval.transports.urls import AttachOptions, check_attach_conditioning
from streameval.transports.webrtc.serve import WebRTCServer
from tests.cases.arena_synth import write_arena
from tests.transports.test_case_servers import SECONDS_PER_KEY, Ran, run_cases
from tests.transports.watchdog import watchdog
from tests.transports.worlds import NAME, NoImageWorld, world

pytestmark = pytest.mark.xdist_group("case-servers")


@pytest.fixture
def arena(tmp_path: Path) -> Path:
    return write_arena(tmp_path / "arena_inputs")


def _serve_and_run(factory: Any, arena: Path, count: int) -> list[Ran]:
    cases = load_cases(arena, sets="first_view/real", images="0-1").cases[:count]
    options = AttachOptions(clock=None, seconds_per_key=SECONDS_PER_KEY, profile="serve",
                            no_frame_timeout_s=8.0)  # fmt: skip
    w = world()

    async def main() -> list[Ran]:
        server = WebRTCServer(factory, name=NAME, fps=w.fps, width=w.width, height=w.height)
        port = await server.start("127.0.0.1", 0)
        dog = asyncio.create_task(watchdog(asyncio.current_task(), 240.0))
        try:
            return await run_cases(f"webrtc+http://127.0.0.1:{port}/offer", options, cases)
        finally:
            dog.cancel()
            await server.stop()

    return asyncio.run(main())


def test_a_served_model_starts_from_each_case_image(arena: Path) -> None:
    ran = _serve_and_run(world, arena, 2)
    assert len(ran) == 2
    for r in ran:
        assert r.outcome.complete, (r.case.key, r.reason)
        assert r.similarity() >= HONOURED_SIMILARITY, r.case.key


def test_a_served_model_without_an_image_reset_refuses_in_its_words(arena: Path) -> None:
    (r,) = _serve_and_run(NoImageWorld, arena, 1)
    assert not r.outcome.complete
    assert (
        "the server refused the session: the served model has a reset() that takes no image"
        in r.reason
    )


def test_attach_refuses_cases_with_images_over_our_protocol(arena: Path) -> None:
    cases = load_cases(arena)
    lossless = AttachOptions(clock=None, seconds_per_key=1.0, lossless=True)
    with pytest.raises(BadInputError, match=r"our protocol .* does not carry a case.s image"):
        check_attach_conditioning(["webrtc+http://127.0.0.1:1/offer"], lossless, cases)
    check_attach_conditioning(
        ["webrtc+http://127.0.0.1:1/offer"], AttachOptions(None, 1.0, profile="serve"), cases
    )


class _Takes:
    def reset(self, image: Any = None, prompt: str | None = None) -> None: ...


def test_start_arguments_read_the_image_inline_or_as_a_path(arena: Path) -> None:
    path = next((arena / "first_view" / "real").glob("000.*"))
    pixels = load_image(path)
    inline = base64.b64encode(path.read_bytes()).decode()
    bodies = [
        {"image_base64": inline},
        {"image_base64": "data:image/jpeg;base64," + inline},
        {"image_path": str(path)},  # absolute, under the root
        {"image_path": str(path.relative_to(arena))},  # relative to the root
    ]
    for body in bodies:
        start = {**body, "prompt": "p", "intrinsics": [1, 2, 3, 4]}
        got = start_arguments(_Takes(), start, image_root=arena)
        assert set(got) == {"image", "prompt"} and got["prompt"] == "p"  # no intrinsics taken
        assert np.array_equal(got["image"], pixels)
    assert start_arguments(_Takes(), {"type": "reset"}) == {}


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"image_base64": "%%%"}, "is not base64"),
        ({"image_base64": base64.b64encode(b"\xff\xd8\xff junk").decode()}, "the case image: "),
        ({"image_path": "/nonexistent/x.jpg"}, "image_path is not taken by this server"),
        ({"image_base64": 3}, "not a non-empty string"),
        ({"prompt": ["x"]}, "prompt is a list"),
        ({"prompt": "x" * 200_000}, "prompt of 200,000 characters"),
        ({"intrinsics": [1, 2, 3]}, "four finite numbers"),
        ({"intrinsics": [1, 2, 3, float("nan")]}, "four finite numbers"),
    ],
)
def test_a_start_the_model_cannot_take_is_one_line(body: dict[str, Any], words: str) -> None:
    with pytest.raises(StartRefused) as info:
        start_arguments(_Takes(), body)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_an_image_path_is_read_only_under_the_servers_image_root(
    arena: Path, tmp_path: Path
) -> None:
    """A network client may not make the server open any file it can read: ``image_path`` is
    refused without ``--image-root``, and under one, a path that resolves outside it (``..``,
    an absolute path elsewhere, a symbolic link out) is refused in one line."""
    image = next((arena / "first_view" / "real").glob("000.*"))
    outside = tmp_path / "secret.jpg"
    outside.write_bytes(image.read_bytes())
    root = tmp_path / "images"
    root.mkdir()
    (root / "link.jpg").symlink_to(outside)
    (root / "ok.jpg").write_bytes(image.read_bytes())
    assert start_arguments(_Takes(), {"image_path": "ok.jpg"}, image_root=root)["image"].size
    for path, words in [
        (str(outside), "is outside the server's --image-root"),
        ("../secret.jpg", "is outside the server's --image-root"),
        ("link.jpg", "is outside the server's --image-root"),
        ("missing.jpg", "the case image: missing.jpg"),
    ]:
        with pytest.raises(StartRefused) as info:
            start_arguments(_Takes(), {"image_path": path}, image_root=root)
        assert words in str(info.value) and "\n" not in str(info.value), path
    with pytest.raises(StartRefused, match="start the server with --image-root DIR"):
        start_arguments(_Takes(), {"image_path": "ok.jpg"})


def test_serve_refuses_an_image_root_that_is_not_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from streameval.cli.main import main

    missing = tmp_path / "no-such-folder"
    code = main(["serve", "python:tests.transports.worlds:world", "--webrtc", "0",
                 "--image-root", str(missing)])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and "--image-root" in err[0] and "is not a folder" in err[0], err
