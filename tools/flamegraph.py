"""A small SVG flame graph from collapsed stacks (``py-spy record --format raw``), pruned so
that it stays a few tens of kB in the repository's docs.

Usage: python tools/flamegraph.py STACKS.txt OUT.svg [--title T] [--min-share 0.004]

Each input line is ``frame;frame;...;frame COUNT`` (root first). Frames narrower than
``--min-share`` of all samples are dropped (their samples still count in their parents).
A frame's tooltip gives its samples and share. Colours: streameval's own code warm, the rest
(Python, numpy, OpenCV, OpenVINO) cool, so where our time goes stands out.
"""

from __future__ import annotations

import argparse
import html
import re
from dataclasses import dataclass, field
from pathlib import Path

WIDTH = 1200.0
ROW = 17.0
FONT = 11.0
CHAR_W = 6.2  # average width of a character at FONT px (monospace-ish)


@dataclass
class Node:
    name: str
    samples: int = 0
    children: dict[str, Node] = field(default_factory=dict)


def read_stacks(path: Path) -> Node:
    root = Node("all")
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        root.samples += n
        node = root
        for frame in stack.split(";"):
            node = node.children.setdefault(frame, Node(frame))
            node.samples += n
    return root


def short(frame: str) -> str:
    """``function (path/to/module.py:line)`` -> ``function (module.py)``."""
    m = re.match(r"(.*?) \((.*?)(?::\d+)?\)$", frame)
    if not m:
        return frame
    func, path = m.groups()
    return f"{func} ({Path(path).name})"


def colour(frame: str, depth: int) -> str:
    own = "streameval" in frame or "/bench/" in frame
    shade = (depth * 37) % 60
    if own:
        return f"rgb({225},{120 + shade},{60})"
    return f"rgb({90 + shade},{150 + shade // 2},{205})"


def render(root: Node, title: str, min_share: float) -> str:
    rects: list[str] = []
    depth_max = 0
    min_samples = max(1, int(root.samples * min_share))

    def walk(node: Node, x: float, depth: int) -> None:
        nonlocal depth_max
        depth_max = max(depth_max, depth)
        w = WIDTH * node.samples / root.samples
        y = depth * ROW
        share = 100.0 * node.samples / root.samples
        label = short(node.name)
        tip = html.escape(f"{label} — {node.samples} samples, {share:.1f} %")
        text = ""
        fits = int((w - 4) / CHAR_W)
        if fits >= 3:
            shown = label if len(label) <= fits else label[: fits - 1] + "…"
            text = f'<text x="{x + 2:.1f}" y="{y + ROW - 5:.1f}">{html.escape(shown)}</text>'
        rects.append(
            f'<g><title>{tip}</title><rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" '
            f'height="{ROW - 1:.1f}" fill="{colour(node.name, depth)}"/>{text}</g>'
        )
        cx = x
        for child in sorted(node.children.values(), key=lambda c: -c.samples):
            if child.samples >= min_samples:
                walk(child, cx, depth + 1)
            cx += WIDTH * child.samples / root.samples

    walk(root, 0.0, 0)
    height = (depth_max + 1) * ROW + 30
    # icicle layout (root on top), read top-down like the collapsed stacks
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH:.0f}" height="{height:.0f}" '
        f'font-family="monospace" font-size="{FONT:.0f}">'
        f'<text x="4" y="14" font-size="13">{html.escape(title)} '
        f"({root.samples} samples; frames under {100 * min_share:.1f} % omitted)</text>"
        f'<g transform="translate(0,22)">'
    )
    return head + "".join(rects) + "</g></svg>\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stacks", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--title", default="flame graph")
    parser.add_argument("--min-share", type=float, default=0.004)
    args = parser.parse_args()
    root = read_stacks(args.stacks)
    if root.samples == 0:
        parser.error(f"{args.stacks}: no collapsed stacks in it")
    args.out.write_text(render(root, args.title, args.min_share))


if __name__ == "__main__":
    main()
