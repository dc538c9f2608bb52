"""``[browser]``: a world model that only exists as a web page (``browser+URL``).

Which element of the page is the world, when the world has started, and how its frames are
taken (docs/serve-formats.md#browser). The transport side is ``transports/browser/``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from streameval.transports.profiles.fields import TomlFields

Capture = Literal["screencast", "screenshot"]
CAPTURES = ("screencast", "screenshot")


@dataclass(frozen=True, slots=True)
class BrowserSpec:
    """``element``: a CSS selector of the world's canvas or video (None: the page's largest
    ``canvas`` or ``video``). The start: ``start_selector`` (an element matching it exists),
    ``start_text`` (the page's text contains it), both, or neither (the world's first
    frame); waited for at most ``start_timeout_s``. ``page``: on a browser the user started
    (``--remote-debugging-port``), the tab whose title or URL contains it (``--page``
    overrides). ``capture``: ``screencast`` (the compositor's frames as they are drawn,
    cropped to the element) or ``screenshot`` (the element captured again and again; an
    unchanged picture is not a frame). ``quality``: their JPEG quality. ``key_repeat``: a
    held key repeats as a keyboard's does (after 0.5 s, 30 a second, ``autoRepeat``)."""

    element: str | None = None
    start_selector: str | None = None
    start_text: str | None = None
    start_timeout_s: float = 30.0
    page: str | None = None
    capture: Capture = "screencast"
    quality: int = 90
    key_repeat: bool = True


def read_browser(top: TomlFields) -> BrowserSpec | None:
    if "browser" not in top.table:
        return None
    s = top.sub("browser")
    spec = BrowserSpec(
        element=_selector(s, "element"),
        start_selector=_selector(s, "start_selector"),
        start_text=s.take("start_text", str) or None,
        start_timeout_s=float(s.number("start_timeout_s", 30.0, 0, 3600) or 30.0),
        page=s.take("page", str) or None,
        capture=s.choice("capture", CAPTURES, "screencast"),
        quality=int(s.number("quality", 90, 0, 100) or 90),
        key_repeat=bool(s.take("key_repeat", bool, True)),
    )
    s.done()
    return spec


def _selector(s: TomlFields, key: str) -> str | None:
    value: str | None = s.take(key, str)
    if value is not None and not value.strip():
        raise s.fail(key, "empty: give a CSS selector, or leave the field out")
    return value
