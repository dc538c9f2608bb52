"""The browser door's parts that need no browser: the ``[browser]`` table of a profile (read
and refused in one line each), the built-in ``web-wasd``, and the key events a keyboard sends."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from streameval.errors import BadInputError
from streameval.transports.browser.cdp import pick_page
from streameval.transports.browser.page import Box, key_event
from streameval.transports.profiles import load_profile, parse_profile

BASE = 'name = "web"\ntransport = "browser"\n'


def test_web_wasd_is_the_largest_element_wasd_and_arrows_held() -> None:
    profile = load_profile("web-wasd")
    assert profile.transport == ("browser",) and profile.browser is not None
    assert profile.browser.element is None and profile.browser.start_selector is None
    assert profile.browser.capture == "screencast" and profile.fps is None
    names = profile.key_names()
    assert [names[k] for k in "WSADLR"] == ["w", "s", "a", "d", "ArrowLeft", "ArrowRight"]
    assert profile.keys.semantics == "hold" and not profile.templates


def test_the_browser_table_is_read_and_checked() -> None:
    text = (
        BASE
        + '[browser]\nelement = "#game canvas"\nstart_text = "Press W"\ncapture = "screenshot"\n'
    )
    spec = parse_profile(text, "web.toml").browser
    assert spec is not None
    assert (spec.element, spec.start_text, spec.capture) == (
        "#game canvas",
        "Press W",
        "screenshot",
    )
    for bad, words in (
        ('[browser]\nelement = " "\n', "browser.element: empty"),
        ('[browser]\ncapture = "video"\n', "'video' is not one of screencast, screenshot"),
        ("[browser]\nzoom = 2\n", "unknown field zoom"),
        ('[keys]\nsemantics = "press"\n', "a browser's keys are held"),
    ):
        with pytest.raises(BadInputError, match=words):
            parse_profile(BASE + bad, "web.toml")
    ws = 'name = "x"\ntransport = "ws"\n[templates.keydown]\nk = "{key}"\n[browser]\npage = "w"\n'
    with pytest.raises(BadInputError, match="only for transport = 'browser'"):
        parse_profile(ws, "x.toml")


def test_keys_are_sent_as_a_keyboard_sends_them() -> None:
    down = key_event("w", "keydown")
    assert (down["type"], down["key"], down["code"], down["windowsVirtualKeyCode"]) == (
        "keyDown", "w", "KeyW", 87,
    )  # fmt: skip
    assert down["text"] == "w"  # keypress and input fire too
    left = key_event("ArrowLeft", "keyup")
    assert (left["type"], left["code"], left["windowsVirtualKeyCode"]) == ("keyUp", "ArrowLeft", 37)
    assert "text" not in left
    assert key_event("ArrowRight", "keydown", repeat=True)["autoRepeat"] is True


def test_a_tab_is_picked_by_its_title_or_url_and_anything_else_is_one_line() -> None:
    tabs = [
        {"title": "Login", "url": "https://example.org/login"},
        {"title": "My World", "url": "https://example.org/play"},
    ]
    assert pick_page(tabs, "world", "browser+http://127.0.0.1:9222")["url"].endswith("/play")
    assert pick_page(tabs, "/play", "u")["title"] == "My World"
    with pytest.raises(BadInputError, match="no tab's title or URL contains 'game'"):
        pick_page(tabs, "game", "u")
    with pytest.raises(BadInputError, match="2 tabs match, give --page TEXT"):
        pick_page(tabs, None, "u")


def test_the_element_is_cropped_from_the_viewport_and_the_pointer_stays_in_it() -> None:
    box = Box(20.0, 100.0, 640.0, 360.0, "canvas", (1280.0, 800.0))
    assert box.crop(1280, 1280.0) == (20, 100, 660, 460)
    assert box.crop(2560, 1280.0) == (40, 200, 1320, 920)  # a 2x device pixel ratio
    assert box.pointer_step((340.0, 280.0), 8.0, 0.0) == (348.0, 280.0)
    assert box.pointer_step((1276.0, 280.0), 8.0, 0.0) == box.centre  # past the edge: back


def test_a_case_image_for_a_web_page_is_one_line_naming_the_page(tmp_path: Path) -> None:
    """A page is sent key events only: cases with images are refused before anything starts,
    naming the URL (with or without --profile), not the built-in profile's file."""
    from streameval.cases.model import Case
    from streameval.transports.urls import AttachOptions, check_attach_conditioning

    case = Case(name="000_006", set="first_view/real", suite="worldmark", image_id=None,
                action=None, keys=None, image_path=tmp_path / "x.png", prompt=None,
                intrinsics=None, origin="test")  # fmt: skip
    url = "browser+http://127.0.0.1:9/world.html"
    for profile in (None, "web-wasd"):
        options = AttachOptions(clock=None, seconds_per_key=1.0, profile=profile)
        with pytest.raises(BadInputError) as caught:
            check_attach_conditioning([url], options, [case])
        assert str(caught.value).startswith(f"{url}: a web page is sent key events only")
    no_image = replace(case, image_path=None)
    check_attach_conditioning([url], AttachOptions(clock=None, seconds_per_key=1.0), [no_image])
