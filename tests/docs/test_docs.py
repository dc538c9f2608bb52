"""The project's documents stand on their own: the README is a front door, every registered
metric has its section in docs/methods.md, and nothing cites a document a user does not have."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from streameval.metrics.registry import metric_specs

ROOT = Path(__file__).resolve().parents[2]
METHODS = ROOT / "docs" / "methods.md"
README_LIMIT = 15_000
# Forms of citation of the private working notes the project was built from.
PRIVATE_CITATION = re.compile(
    r"SPEC ?§|DESIGN ?§|\bseeds? ?00[0-4]\b|\.\./shared|\bSPEC\.md\b|\bFIX ?[0-9]+\b|\(STYLE[:\" ]"
)


def github_anchor(heading: str) -> str:
    """GitHub's slug of a heading: lowercase, punctuation dropped (``-`` and ``_`` kept),
    spaces to ``-``."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {
        github_anchor(line.lstrip("#"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith("#")
    }


def test_readme_is_a_front_door() -> None:
    size = len((ROOT / "README.md").read_text(encoding="utf-8"))
    assert size <= README_LIMIT, f"README.md has {size} characters (limit {README_LIMIT})"


def test_every_registered_metric_has_its_section_in_methods() -> None:
    found = anchors(METHODS)
    missing = [s.name for s in metric_specs() if s.name not in found]
    assert not missing, f"docs/methods.md has no heading for {missing}"


def test_anchor_slugger_matches_githubs() -> None:
    assert github_anchor(" Analysis frame and flow units") == "analysis-frame-and-flow-units"
    assert github_anchor("direction_accuracy_trans") == "direction_accuracy_trans"
    assert github_anchor("WorldAtlas memory_loop metrics") == "worldatlas-memory_loop-metrics"


def _tracked_text_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    suffixes = {".py", ".md", ".toml", ".tcss", ".sh", ".txt", ".json"}
    return [
        ROOT / name
        for name in listed.stdout.splitlines()
        if (Path(name).suffix in suffixes or name in {"Makefile", ".ci/run"})
        and (ROOT / name).is_file()
    ]


def test_no_citation_of_documents_users_do_not_have() -> None:
    this = Path(__file__).resolve()
    hits = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()[:80]}"
        for path in _tracked_text_files()
        if path.resolve() != this
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if PRIVATE_CITATION.search(line)
    ]
    assert not hits, f"{len(hits)} private citations:\n" + "\n".join(hits[:40])


def test_doc_links_resolve() -> None:
    """Every relative link from README.md and docs/*.md names a file that exists, and its
    #anchor a heading of that file."""
    problems: list[str] = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path_part, _, anchor = target.partition("#")
            linked = (doc.parent / path_part).resolve() if path_part else doc
            if not linked.exists():
                problems.append(f"{doc.name}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                problems.append(f"{doc.name}: {target} (no such heading)")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("module", ["streameval.engine.rescore", "streameval.leaderboard"])
def test_results_side_imports_no_heavy_library(module: str) -> None:
    """rescore and the leaderboard read caches and scores.json: importing them loads neither
    OpenCV, PyAV, torch nor the pipeline (a results host needs none of them)."""
    code = (
        f"import sys, {module}; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('cv2', 'av', 'torch') "
        "or m == 'streameval.engine.pipeline'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]", out.stdout


def test_architecture_names_every_module() -> None:
    """docs/architecture.md's layout has one line per module (``tools/module_index.py``
    rewrites it): a newcomer finds every module there, with what it holds."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [
        path.relative_to(ROOT).as_posix()
        for top in ("streameval", "protocol", "replay", "tui", "examples")
        for path in sorted((ROOT / top).rglob("*.py"))
        if "__pycache__" not in path.parts and f"`{path.relative_to(ROOT).as_posix()}`" not in text
    ]
    assert not missing, f"not in docs/architecture.md (run tools/module_index.py): {missing}"
