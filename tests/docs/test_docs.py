"""The project's documents stand on their own: the README is a front door, every registered
metric has its section in docs/methods.md, nothing cites a document a user does not have, and
every repository path or module a document or comment names exists."""

from __future__ import annotations

import contextlib
import functools
import io
import re
import subprocess
import sys
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

from streameval.metrics.registry import metric_specs

ROOT = Path(__file__).resolve().parents[2]
METHODS = ROOT / "docs" / "methods.md"
README_LIMIT = 15_000
# How the private working notes the project was built from were cited: numbered issues and
# findings, the seed documents, the notes by file name or section. Users have none of them, so a
# comment or a document says the reason itself, or cites a public source or a docs/ section.
# The golden parity data beside the clone (``../shared/reference/golden``) is a path, not a
# citation: tests/parity reads it when it is there.
PRIVATE_CITATION = re.compile(
    r"""
    \bissues?\s*\#?\s*\d+                      # issue 12, Issue #3, issues 10 and 11
    | \bfindings?\s*\#?\s*\d+                  # finding 3, findings 6 and 7
    | \bseeds?[\s_-]*0\d\d\b                   # seed 004, Seed 000, seed-000, seeds 003
    | \b(?:ENVIRONMENT|SPEC|DESIGN|STYLE)\.md\b   # the notes by file name
    | \b(?:SPEC|DESIGN|STYLE)\s*§ | §\s*\d      # SPEC §9, (§4.2)
    | \.\./shared(?!/reference/)              # ../shared, ../shared/seeds
    | (?<![\w/.-])shared/(?!reference/)       # shared/SPEC.md
    | (?-i:\bFIX\s?\d+\b | \(STYLE[:" ])      # FIX 3, (STYLE: ...)
    """,
    re.IGNORECASE | re.VERBOSE,
)
TEXT_SUFFIXES = {".py", ".md", ".toml", ".tcss", ".sh", ".txt", ".json", ".yml", ".yaml", ".cfg"}
TEXT_NAMES = {"Makefile", ".ci/run", ".gitignore"}


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


def _tracked_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    return [name for name in listed.stdout.splitlines() if (ROOT / name).is_file()]


def _tracked_text_files() -> list[Path]:
    return [
        ROOT / name
        for name in _tracked_files()
        if Path(name).suffix in TEXT_SUFFIXES or name in TEXT_NAMES
    ]


# A line that ends where a citation may go on in the next line ("(issue" / "9)").
CITATION_CUT = re.compile(
    r"\b(?:issues?|findings?|seeds?|SPEC|DESIGN|STYLE)[\s#_-]*$|\.\./$|§\s*$", re.IGNORECASE
)


def private_citations(text: str) -> Iterator[tuple[int, str]]:
    """(line number, citation) of every private citation in ``text``. A line cut where a
    citation may go on ("(issue" / "9)", "seed" / "000's") is read with the start of the next
    one; the citation is reported on the line it starts."""
    lines = text.splitlines()
    for n, line in enumerate(lines):
        match = PRIVATE_CITATION.search(line)
        if match is None and n + 1 < len(lines) and CITATION_CUT.search(line):
            following = lines[n + 1].lstrip(" \t#*>\"'-")
            match = PRIVATE_CITATION.search(f"{line} {following}")
            if match is not None and match.start() >= len(line):
                match = None
        if match is not None:
            yield n + 1, match.group(0)


# Lines of this repository's own history that cited the private notes (and a few more forms):
# the pattern must find every one. The case-sensitive pattern it replaced missed 17 of these 25.
CITING = [
    "# broker is a failure, not a skip (the MQTT tests are acceptance tests of issue 11)",
    '"""Issue 13, findings 6 and 7: every argument has help text; Ctrl-C is a user stop (130)',
    "columns at 80 columns (finding 3), flags mixed backends and writes JSON, CSV and HTML (8).",
    "`streameval/perception/transnet_pool.py` — TransNetV2 worker processes (issue 9)",
    "Read back through issue 10's checked ``.npz`` layer: a damaged or foreign archive is one",
    "the two repros of Issue #9, with the reference's numbers",
    "(issues 10 and 11)",
    "Seed 000 scores Perceptual and Aesthetic Quality with Q-Align / OneAlign",
    '"""Q-Align columns, seed-004 drift and the CPU imaging statistics."""',
    "# Seed 004's normalization of the memory_loop metrics: bounded, nATE reversed.",
    "the seeds 003 and 004 agree",
    "aiortc on loopback (ENVIRONMENT.md): no STUN server, and host candidates on 127.0.0.1.",
    "layer rules as in SPEC.md",
    "see DESIGN.md",
    "(STYLE.md: type hints everywhere)",
    "the window edge of SPEC §9",
    "as required (§4.2)",
    "the notes in ../shared",
    "read ../shared/seeds/000.txt",
    "`shared/SPEC.md`",
    "FIX 3: the latency window",
    "(STYLE: no bare except)",
    # wrapped across two lines
    "(a wall-clock recording, issue\n11)",
    '"""The registered column metrics: those of every suite (seed\n    000\'s master table)',
    "# measured once (see\n# ENVIRONMENT.md)",
]

# Lines that must not count as citations.
LEGITIMATE = [
    "Report a bug in the project's GitHub issues.",
    "https://github.com/Breakthrough/PySceneDetect/issues/123",
    "issuer_key: ec.EllipticCurvePrivateKey,",
    "rng = np.random.default_rng(seed)",
    "frames = render(seed=0)",
    "python bench/motion_type.py --seed 3",
    "protocol seed 17, compatibility protocol anchor_compat",
    "Measured (89 cuts: seeds 0–9, every key)",
    '"""Seed 0 for 40 frames, then seed 1 with its colour channels swapped."""',
    "what the tests found: 3 dropped frames",
    "fix 2 frames of latency",
    "STYLES: dict[str, Style] = {",
    "state shared by the episodes of one run",
    "golden data (optional, beside the clone: ../shared/reference/golden)",
    "By default the folder is ``shared/reference/golden`` beside the clone",
    "the spec's kernel (MetricSpec)",
]


@pytest.mark.parametrize("text", CITING)
def test_citation_pattern_finds_every_old_form(text: str) -> None:
    assert list(private_citations(text)), text


@pytest.mark.parametrize("text", LEGITIMATE)
def test_citation_pattern_spares_plain_prose_and_code(text: str) -> None:
    assert not list(private_citations(text)), list(private_citations(text))


def test_no_citation_of_documents_users_do_not_have() -> None:
    this = Path(__file__).resolve()  # holds the samples above
    hits = [
        f"{path.relative_to(ROOT)}:{n}: {found!r}"
        for path in _tracked_text_files()
        if path.resolve() != this
        for n, found in private_citations(path.read_text(encoding="utf-8"))
    ]
    assert not hits, f"{len(hits)} private citations:\n" + "\n".join(hits[:60])


# --- every repository path and module a document or a comment names exists ----------------

# Where names are looked for: `code spans` of the documents and of the comments and docstrings
# of the code, and the bare path forms docs/...md, tests/...py, streameval/...py, bench/...py,
# tools/... anywhere in them.
CODE_SPAN = re.compile(r"(`{1,2})([^`\n]+?)\1")
BARE_PATH = re.compile(
    r"(?<![\w./-])(?:docs|tests|streameval|bench|tools|protocol|replay|tui|examples|\.ci)/[\w./-]*"
)
# Outside code spans too: a file of ours by name or short path (``metrics/imaging.py``,
# ``control.py``), and a snake_case module's attribute (``episode_scores.fit_plan``).
BARE_FILE = re.compile(r"(?<![\w./-])(?:[\w-]+/)*[\w-]+\.(?:py|md|tcss|sh)\b")
BARE_ATTRIBUTE = re.compile(r"(?<![\w./-])[a-z][a-z0-9]*_[a-z0-9_]*\.[A-Za-z_]\w*\b(?![./-]\w)")
DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_]\w*)?")
SNAKE = re.compile(r"[a-z][a-z0-9]*_[a-z0-9_]*")
# Folders pyproject maps into the streameval namespace (docs/architecture.md#layout).
MAPPED = {"protocol": "protocol", "replay": "replay", "tui": "tui", "worlds": "examples"}
# The last part of a dotted name that is a file, not a module (``results.jsonl``).
DATA_SUFFIXES = {
    *("html", "json", "jsonl", "npz", "npy", "png", "svg", "csv", "pth", "bin", "mp4"),
    *("toml", "md", "py", "txt", "tcss", "sh", "lock", "safetensors"),
}
# Names missing from the repository on purpose. Keep this short: a name that is missing by
# mistake belongs fixed, not listed here.
NOT_IN_REPO = {
    # the kernel module docs/adding-a-metric.md walks a reader through writing
    "streameval/metrics/quality/signal_coverage.py",
    "streameval.metrics.quality.signal_coverage",
    # the same, in the example of metrics/registry.py's docstring
    "streameval/metrics/quality/sharpness.py",
    "streameval.metrics.quality.sharpness",
    # the reader's own adapter in docs/evaluate-your-model.md
    "mymodel.py",
    # files of the reference's code and of a SEA-RAFT checkout (perception/sea_raft_flow.py)
    "wm_config.py",
    "flow_eval.py",
    "raft.py",
    # the module tests/inputs names to check that a missing one is reported
    "tests.inputs.no_such_module",
    # files of the public servers the built-in profiles follow (Yume's web app, Matrix-Game
    # 3's entry point), and the script of an exec: URL in an example
    "webapp_single_gpu.py",
    "generate.py",
    "prog.py",
    # Overworld's world engine (Overworldai/world_engine), which the overworld profile follows
    "examples/websocket_server.py",
    "server.py",
    "src/world_engine.py",
}
# Folders of a results directory (docs/cli.md#results-directory), not of the repository: an
# episode's cache, and the demo's output folder in the README's examples.
RESULTS_PREFIXES = ("cache/", "results/demo")


def python_prose(source: str) -> tuple[list[tuple[int, str]], set[str]]:
    """The comments and the strings that stand as statements (docstrings) of a Python source,
    as (line, text) — where code is described, not run — and the names its code uses."""
    prose: list[tuple[int, str]] = []
    names: set[str] = set()
    previous = tokenize.NEWLINE
    statement_start = (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT)
    with contextlib.suppress(tokenize.TokenError, SyntaxError):
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT or (
                tok.type == tokenize.STRING and previous in statement_start
            ):
                prose.append((tok.start[0], tok.string))
            elif tok.type == tokenize.NAME:
                names.add(tok.string)
            if tok.type not in (tokenize.COMMENT, tokenize.NL):
                previous = tok.type
    return prose, names


class Repository:
    """The tracked files and folders, the names the code uses, and whether a cited path or
    module is among them."""

    def __init__(self, files: set[str], identifiers: set[str]) -> None:
        from streameval.cli.main import COMMANDS

        self.files = files
        self.dirs = {p.as_posix() for f in files for p in Path(f).parents} - {"."}
        self.dir_names = {Path(d).name for d in self.dirs}
        # every tracked path and each of its tails: ``engine/pipeline.py``, ``pipeline.py``
        self.tails = {
            "/".join(parts[i:])
            for path in files | self.dirs
            for parts in [path.split("/")]
            for i in range(len(parts))
        }
        self.basenames = {Path(f).name for f in files}
        self.modules = {Path(f).stem for f in files if f.endswith(".py")} | self.dir_names
        self.identifiers = identifiers
        self.commands = set(COMMANDS)
        packages = {Path(d).name for d in self.dirs if Path(d).parent.as_posix() == "streameval"}
        self.roots = {"streameval", "tests", "bench", "tools", *MAPPED, *packages}

    def path_exists(self, cited: str) -> bool:
        """From the repository root, or as the tail of a tracked path (a module's shorthand,
        ``engine/pipeline.py``; a sibling, ``webrtc/test_public_peer.py``); a folder of the
        installed namespace (``streameval/protocol/``) is its mapped folder."""
        parts = cited.strip("/").split("/")
        if parts[0] == "streameval" and len(parts) > 1 and parts[1] in MAPPED:
            parts = [MAPPED[parts[1]], *parts[2:]]
        return "/".join(parts) in self.tails

    def module_exists(self, dotted: str) -> bool:
        """``streameval.a.b[.name]``, ``a.b[.name]`` from streameval, or ``module:name``: the
        module is a tracked file, and ``name`` one of its submodules or a word of its source."""
        dotted, _, attr = dotted.partition(":")
        parts = dotted.split(".")
        folder = "streameval"
        if parts[0] == "streameval":
            parts = parts[1:]
        elif parts[0] in ("tests", "bench", "tools"):
            folder, parts = parts[0], parts[1:]
        if parts and parts[0] in MAPPED:
            folder, parts = MAPPED[parts[0]], parts[1:]
        module = f"{folder}/__init__.py"
        for name in [*parts, attr] if attr else parts:
            if f"{folder}/{name}" in self.dirs:
                folder, module = f"{folder}/{name}", f"{folder}/{name}/__init__.py"
            elif f"{folder}/{name}.py" in self.files:
                folder, module = f"{folder}/{name}", f"{folder}/{name}.py"
            else:
                source = (ROOT / module).read_text(encoding="utf-8") if module in self.files else ""
                return re.search(rf"\b{re.escape(name)}\b", source) is not None
        return True

    def problems(self, text: str) -> Iterator[tuple[int, str]]:
        """(offset in ``text``, name) of each path or module ``text`` names that does not
        exist."""
        for m in CODE_SPAN.finditer(text):
            for cited in self._span_problems(m.group(2).strip()):
                yield m.start(), cited
        blanked = CODE_SPAN.sub(lambda m: " " * len(m.group(0)), text)
        for m in BARE_PATH.finditer(blanked):
            cited = m.group(0).split("#")[0].rstrip(".,;:")
            if not self._placeholder(cited) and not self.path_exists(cited):
                yield m.start(), cited
        for pattern in (BARE_FILE, BARE_ATTRIBUTE):
            for m in pattern.finditer(blanked):
                if not BARE_PATH.match(m.group(0)):
                    for cited in self._span_problems(m.group(0)):
                        yield m.start(), cited

    def _placeholder(self, cited: str) -> bool:
        """Listed above, a results folder, a list of commands (``replay/rescore``), or a
        pattern (``OUT/<model>/``, ``streameval/SESSION/scores``, ``streameval.X``, ``*.py``)."""
        parts = [p for p in re.split(r"[/.]", cited) if p]
        return (
            cited in NOT_IN_REPO
            or cited.startswith(RESULTS_PREFIXES)
            or all(p in self.commands for p in parts)
            or re.search(r"[<>{}*$~…\s]|\.\.\.", cited) is not None
            or any(re.fullmatch(r"[A-Z][A-Z_]*", p) for p in cited.split("/"))
            or any(re.fullmatch(r"[A-Z]", p) for p in parts)
        )

    def _span_problems(self, span: str) -> Iterator[str]:
        cited = span.split("#")[0].split("::")[0].removesuffix("()").rstrip(".,;:")
        if not cited or self._placeholder(cited):
            return
        if "/" in cited:
            if cited.split("/")[0] in self.dir_names and not self.path_exists(cited):
                yield cited
        elif re.fullmatch(r"[\w.-]+\.(?:py|md|tcss|sh)", cited):
            if cited not in self.basenames:
                yield cited
        elif (
            DOTTED.fullmatch(cited) and cited.split(":")[0].rsplit(".", 1)[-1] not in DATA_SUFFIXES
        ):
            head = cited.split(".")[0]
            if head in self.roots:
                if not self.module_exists(cited):
                    yield cited
            elif SNAKE.fullmatch(head) and head not in self.modules | self.identifiers:
                yield cited  # ``old_module.name``: neither a module nor a name of the code


@functools.cache
def _repository_and_prose() -> tuple[Repository, list[tuple[str, int, str]]]:
    """The repository, and (file, first line, text) of everything that describes: documents
    whole, Python comments and docstrings, the other text files whole."""
    this = Path(__file__).resolve()
    prose: list[tuple[str, int, str]] = []
    identifiers: set[str] = set()
    for path in _tracked_text_files():
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".py":
            chunks, names = python_prose(text)
            identifiers |= names
        else:
            chunks = [] if path.suffix == ".json" else [(1, text)]
        if path.resolve() != this:  # holds the samples below
            prose += [(rel, line, chunk) for line, chunk in chunks]
    return Repository(set(_tracked_files()), identifiers), prose


def test_every_cited_repository_path_exists() -> None:
    """A path or a module a document, a comment or a docstring names is in the repository: a
    module that moved or was renamed leaves no name pointing nowhere."""
    repo, prose = _repository_and_prose()
    problems = sorted(
        {
            f"{rel}:{line + text.count(chr(10), 0, offset)}: {cited}"
            for rel, line, text in prose
            for offset, cited in repo.problems(text)
        }
    )
    assert not problems, f"{len(problems)} names point nowhere:\n" + "\n".join(problems[:60])


# Names this repository's comments once gave modules that had been renamed or removed: the check
# must report each one.
DANGLING = [
    "see ``metrics/control_online.py`` for which values are exact",
    "``control.py`` scores a whole episode with them",
    "the online control accumulator (``control_online.py``)",
    "the fit plan of ``episode_scores.fit_plan``",
    "As ``memory_local.local_memory_model``: the mean mutation rate skips None",
    "a CPU statistic in its own unit (``metrics.imaging.STAT_FIELDS``)",
    "kernel: ``streameval.metrics.quality_sharpness:sharpness_scores``",
    "Perception (``perception/motion_type.py``) only produces the samples",
    "(`test_mjpeg.py`, `tests/engine/test_wall_clock_fits.py`)",
    "measured by tests/pipeline/test_identity.py",
    "see docs/metrics.md#local_memory",
    "``streameval.engine.scoring:no_such_kernel``",
]
# Names that exist, or are not meant to be repository paths.
RESOLVED = [
    "see ``metrics/control/online.py``, ``engine/pipeline.py`` and ``online.py``",
    "``engine.scoring.fit_plan``, ``streameval.metrics.control.episode:control_scores``",
    "``streameval.evaluate``, ``streameval.protocol.keys``, ``streameval.worlds``",
    "docs/methods.md#control-segments and tests/parity, `streameval/protocol/`",
    "``inp.cache.sx``, ``self._samples``, ``results.jsonl``, ``report.html``",
    "written to ``OUT/<model>/<episode>/``, ``cache/worldatlas.npz``, `results/demo/index.html`",
    "the topic ``streameval/SESSION/scores``; ``streameval.X``; the `replay/rescore` commands",
    "``torchvision/models/optical_flow/raft.py``, ``config/eval/spring-M.json``",
    "golden data in ``shared/reference/golden`` beside the clone",
]


@pytest.mark.parametrize("text", DANGLING)
def test_path_check_reports_a_name_that_points_nowhere(text: str) -> None:
    repo, _ = _repository_and_prose()
    assert list(repo.problems(text)), text


@pytest.mark.parametrize("text", RESOLVED)
def test_path_check_accepts_names_that_exist(text: str) -> None:
    repo, _ = _repository_and_prose()
    assert not list(repo.problems(text)), list(repo.problems(text))


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
