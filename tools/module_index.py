"""Rewrite the module list of docs/architecture.md ("## Layout") from the modules themselves.

One line per module: its path and the first line of its docstring. A module added without
running this fails ``tests/docs/test_docs.py::test_architecture_names_every_module``.
Run: ``python tools/module_index.py`` (from anywhere; edits the file in place).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
START = "One line per module (the first line of its docstring):\n"
END = "\n## Import layers"
# folder -> the installed name shown beside its heading (pyproject package-dir)
MAPPED = {"protocol": "streameval.protocol", "replay": "streameval.replay",
          "tui": "streameval.tui", "examples": "streameval.worlds"}  # fmt: skip


def first_line(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    if not doc:
        return "(package marker)" if path.name == "__init__.py" else "(no docstring)"
    line = doc.strip().split("\n\n")[0].replace("\n", " ")
    line = re.sub(r"``([^`]+)``", r"`\1`", line)
    return re.split(r"(?<=[a-z)`])\.\s", line)[0].rstrip(".")


def module_list() -> str:
    blocks: list[str] = []
    for top in ["streameval", *MAPPED]:
        folders = sorted({p.parent for p in (ROOT / top).rglob("*.py")} - {Path()})
        for folder in folders:
            if "__pycache__" in folder.parts:
                continue
            rel = folder.relative_to(ROOT).as_posix()
            title = f"**`{rel}/`**" + (f" → `{MAPPED[rel]}`" if rel in MAPPED else "")
            lines = [
                f"- `{p.relative_to(ROOT).as_posix()}` — {first_line(p)}"
                for p in sorted(folder.glob("*.py"))
            ]
            blocks.append(title + "\n\n" + "\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def main() -> None:
    text = DOC.read_text(encoding="utf-8")
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    DOC.write_text(head + START + "\n" + module_list() + END + tail, encoding="utf-8")


if __name__ == "__main__":
    main()
