"""What the browser transport asks of a page: its start condition, the world's element and
where it is, and the key events a real keyboard would send (``key``, ``code``,
``windowsVirtualKeyCode``), as JavaScript and DevTools parameters."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from streameval.transports.profiles.templates import keycode_of

NAMED_CODES = {
    "ArrowLeft": "ArrowLeft",
    "ArrowRight": "ArrowRight",
    "ArrowUp": "ArrowUp",
    "ArrowDown": "ArrowDown",
    " ": "Space",
    "Enter": "Enter",
    "Escape": "Escape",
    "Tab": "Tab",
    "Shift": "ShiftLeft",
    "Control": "ControlLeft",
    "Alt": "AltLeft",
}
NAMED_KEYCODES = {"Enter": 13, "Escape": 27, "Tab": 9, "Shift": 16, "Control": 17, "Alt": 18}


def key_event(name: str, kind: str, repeat: bool = False) -> dict[str, Any]:
    """``Input.dispatchKeyEvent`` parameters for the browser key ``name`` (``w``,
    ``ArrowLeft``): a printable key's keyDown carries its text (keypress and input fire, as
    they do for a real keyboard)."""
    code = NAMED_CODES.get(name)
    if code is None and len(name) == 1 and name.isascii() and name.isalpha():
        code = f"Key{name.upper()}"
    elif code is None and len(name) == 1 and name.isdigit():
        code = f"Digit{name}"
    vk = NAMED_KEYCODES.get(name) or keycode_of(name) or 0
    params: dict[str, Any] = {
        "type": "keyDown" if kind == "keydown" else "keyUp",
        "key": name,
        "code": code or name,
        "windowsVirtualKeyCode": vk,
        "nativeVirtualKeyCode": vk,
    }
    if kind == "keydown" and len(name) == 1:
        params["text"] = params["unmodifiedText"] = name
    if repeat:
        params["autoRepeat"] = True
    return params


START_JS = """(() => {
  const sel = %s, text = %s;
  if (sel !== null && document.querySelector(sel) === null) return false;
  if (text !== null && !(document.body && document.body.innerText.includes(text))) return false;
  return true;
})()"""


def start_expression(selector: str | None, text: str | None) -> str:
    """True once the page shows the profile's start (a selector, a text, both)."""
    return START_JS % (json.dumps(selector), json.dumps(text))


def describe_start(selector: str | None, text: str | None) -> str:
    parts = []
    if selector is not None:
        parts.append(f"no element matches {selector!r}")
    if text is not None:
        parts.append(f"its text never contained {text!r}")
    return " and ".join(parts) or "the world's element drew no frame"


ELEMENT_JS = """(() => {
  const sel = %s;
  let el = null;
  if (sel !== null) { el = document.querySelector(sel); }
  else {
    let best = 0;
    for (const c of document.querySelectorAll('canvas, video')) {
      const r = c.getBoundingClientRect(), a = r.width * r.height;
      if (a > best) { best = a; el = c; }
    }
  }
  if (el === null) return null;
  el.scrollIntoView({block: 'center', inline: 'center'});
  const r = el.getBoundingClientRect();
  return {x: r.left, y: r.top, width: r.width, height: r.height, tag: el.tagName.toLowerCase(),
          viewport: [window.innerWidth, window.innerHeight], dpr: window.devicePixelRatio,
          title: document.title};
})()"""


def element_expression(selector: str | None) -> str:
    """Where the world's element is (CSS pixels of the viewport), scrolled into view."""
    return ELEMENT_JS % json.dumps(selector)


@dataclass(frozen=True, slots=True)
class Box:
    """The world's element in CSS pixels of the viewport."""

    x: float
    y: float
    width: float
    height: float
    tag: str
    viewport: tuple[float, float] = (0.0, 0.0)  # the page's viewport, CSS pixels

    @classmethod
    def of(cls, found: dict[str, Any]) -> Box:
        view = found.get("viewport") or (0, 0)
        return cls(
            float(found["x"]),
            float(found["y"]),
            float(found["width"]),
            float(found["height"]),
            str(found.get("tag", "?")),
            (float(view[0]), float(view[1])),
        )

    def crop(self, image_width: int, css_width: float, offset_top: float = 0.0) -> tuple[int, ...]:
        """Its pixels in a viewport image ``image_width`` wide (``css_width`` CSS pixels):
        (x0, y0, x1, y1)."""
        scale = image_width / css_width if css_width > 0 else 1.0
        x0 = round(self.x * scale)
        y0 = round((self.y + offset_top) * scale)
        return x0, y0, x0 + round(self.width * scale), y0 + round(self.height * scale)

    @property
    def centre(self) -> tuple[float, float]:
        return self.x + self.width / 2, self.y + self.height / 2

    def pointer_step(self, at: tuple[float, float], dx: float, dy: float) -> tuple[float, float]:
        """The pointer moved by (dx, dy) from ``at``; past the viewport's edge (the element's,
        when the viewport is unknown) it starts again at the element's centre."""
        x, y = at[0] + dx, at[1] + dy
        right, bottom = self.viewport
        if right <= 0 or bottom <= 0:
            inside = self.x <= x < self.x + self.width and self.y <= y < self.y + self.height
        else:
            inside = 0 <= x < right and 0 <= y < bottom
        return (x, y) if inside else self.centre
