"""Small HTML building blocks shared by the episode report and the index: escaping, the page
shell with its inline stylesheet, PNG data URIs and tables."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from html import escape

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; font-size: 0.9em; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.official { color: #1a7f37; } .not_applicable { color: #6e7781; } .missing { color: #cf222e; }
.best { background: #d7f5dd; } .second { background: #fff3c4; } .worst { background: #ffd9d6; }
img.plot { max-width: 100%; border: 1px solid #eee; }
.note { color: #555; font-size: 0.9em; }
"""


def page(title: str, body: Sequence[str]) -> str:
    """A complete, self-contained HTML document (no script, no external resource)."""
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>{escape(title)}</title>",
            f"<style>{STYLE}</style></head><body>",
            *body,
            "</body></html>",
            "",
        ]
    )


def png_img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img class="plot" alt="{escape(alt)}" src="data:image/png;base64,{data}">'


def table(header: Sequence[str], rows: Sequence[Sequence[str]], *, raw: bool = False) -> str:
    """An HTML table; cells are escaped unless ``raw`` (then they are trusted HTML)."""

    def cell(text: str, tag: str) -> str:
        return f"<{tag}>{text if raw else escape(text)}</{tag}>"

    head = "".join(cell(h, "th") for h in header)
    body = "".join("<tr>" + "".join(cell(c, "td") for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def number(value: object, digits: int = 2) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "—" if value is None else str(value)
    return f"{value:.{digits}f}"
