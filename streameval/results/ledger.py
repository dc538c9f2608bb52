"""The run ledger (``OUT/ledger.json``): every input and output of a run bound by its sha256,
with the versions and the host that produced them, so that ``streameval verify`` can say
whether a results folder is still what the run wrote (docs/cli.md#verify).

Why a digest of every file and not only of ``scores.json``: a number is evidence only together
with what it came from — the recording it was perceived from, the cache it was scored from, the
case images and profile it was driven with — and a swapped recording or an edited cache leaves
``scores.json`` untouched. The ledger is written last, after the reports, through
``core.atomic`` (a reader never sees half a ledger).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from streameval.core.atomic import TMP_SUFFIX, write_json_atomic
from streameval.errors import BadInputError, redact_url
from streameval.inputs.jsonfile import read_json_file

LEDGER_FILE = "ledger.json"
# what a run gathered beside its scores (hardware, repeats, claim), written before its reports
# (``index.html`` shows it) and hashed by the ledger like every other output
EVIDENCE_FILE = "evidence.json"
LEDGER_FORMAT = "streameval.ledger/1"
_CHUNK = 1 << 20
# files of a results folder that are no artifact of a run: the ledger itself, the results
# log's lock, and the temporary files of an atomic write a killed process left behind
_NOT_ARTIFACTS_SUFFIXES = (".lock", TMP_SUFFIX)


def sha256_file(path: Path) -> str:
    """The sha256 of a file's bytes, read in 1 MiB blocks (a recording may be large)."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def sha256_json(value: Any) -> str:
    """The sha256 of ``value`` as canonical JSON (sorted keys, no spaces): options and a suite
    definition are hashed by what they say, not by how a dict happened to be ordered."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _is_artifact(path: Path) -> bool:
    name = path.name
    if name == LEDGER_FILE or TMP_SUFFIX + "." in name:
        return False
    return not name.endswith(_NOT_ARTIFACTS_SUFFIXES)


def artifact_files(root: Path) -> list[Path]:
    """Every file below ``root`` a run wrote (recordings, caches, scores, reports, the results
    log), sorted by path; links are not followed out of the folder."""
    found = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and _is_artifact(p)]
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def file_entry(path: Path) -> dict[str, Any]:
    return {"sha256": sha256_file(path), "bytes": path.stat().st_size}


def host_facts() -> dict[str, Any]:
    """The machine that ran: CPU model, logical cores, memory, OS, Python (what can move a
    timing, and what a reader needs to compare two runs' speeds)."""
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_bytes": _memory_bytes(),
        "os": platform.platform(),
        "machine": platform.machine(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _memory_bytes() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def software_versions() -> dict[str, str]:
    """streameval and the libraries that can move a number (``results.provenance``), with
    pynvml where installed (the GPU figures come through it)."""
    from importlib import metadata

    from streameval.core.version import __version__
    from streameval.results.provenance import library_versions

    versions = {"streameval": __version__, **library_versions()}
    for name in ("nvidia-ml-py", "pynvml"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


@dataclass
class RunInputs:
    """What a run was given: the command (or ``"api"``), its argv, its options as plain JSON,
    and the input files by label (a profile, a case image, a rollout's files). ``suites``:
    each suite name driven, with its definition (the key rows or trajectories)."""

    command: str
    argv: list[str] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)  # label → sha256 known up front
    suites: dict[str, Any] = field(default_factory=dict)


def plain_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` as JSON values: paths and other objects as their text, callables left out
    (argparse keeps the command's runner in its namespace), a URL's password taken out (a
    ledger is shared with the results)."""
    out: dict[str, Any] = {}
    for key, value in sorted(options.items()):
        if callable(value) and not isinstance(value, type):
            continue
        out[key] = _redacted(json.loads(json.dumps(value, default=str)))
    return out


def _redacted(value: Any) -> Any:
    """``value`` with every string that is a URL with a password redacted (``redact_url``)."""
    if isinstance(value, str):
        return redact_url(value)
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    if isinstance(value, dict):
        return {k: _redacted(v) for k, v in value.items()}
    return value


def _input_entries(inputs: RunInputs) -> dict[str, Any]:
    files: dict[str, Any] = {}
    for label, path in sorted(inputs.files.items()):
        entry: dict[str, Any] = {"path": str(path)}
        if path.is_file():
            entry |= file_entry(path)
        elif label in inputs.digests:
            entry["sha256"] = inputs.digests[label]
        else:
            entry["missing"] = True
        files[label] = entry
    for label, digest in sorted(inputs.digests.items()):
        files.setdefault(label, {"sha256": digest})
    argv = None if inputs.argv is None else [_redacted_arg(a) for a in inputs.argv]
    options = _redacted(inputs.options)
    return {
        "command": inputs.command,
        "argv": argv,
        "options": options,
        "options_sha256": sha256_json({"argv": argv, "options": options}),
        "suites": {
            name: {"definition": spec, "sha256": sha256_json(spec)}
            for name, spec in sorted(inputs.suites.items())
        },
        "files": files,
    }


def _backends(root: Path, episodes: Iterable[Path]) -> dict[str, list[str]]:
    """Every backend an episode of this run used, by job (``flow``: ``["dis-fast"]``), from
    the provenance its scores.json carries."""
    used: dict[str, set[str]] = {}
    for episode in episodes:
        try:
            doc = read_json_file(episode / "scores.json")
        except BadInputError:
            continue
        provenance = doc.get("provenance") if isinstance(doc, dict) else None
        backends = provenance.get("backends") if isinstance(provenance, dict) else None
        for job, name in (backends or {}).items():
            if isinstance(name, str):
                used.setdefault(job, set()).add(name)
    return {job: sorted(names) for job, names in sorted(used.items())}


def build_ledger(
    root: Path,
    inputs: RunInputs,
    episodes: Iterable[Path],
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ledger of the run whose results are under ``root``: ``episodes`` are the results
    folders this run wrote; ``extra`` adds sections (hardware, claim, repeats)."""
    episodes = sorted(set(episodes))
    outputs = {p.relative_to(root).as_posix(): file_entry(p) for p in artifact_files(root)}
    ledger: dict[str, Any] = {
        "format": LEDGER_FORMAT,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "inputs": _input_entries(inputs),
        "episodes": [_relative(root, e) for e in episodes],
        "outputs": outputs,
        "backends": _backends(root, episodes),
        "versions": software_versions(),
        "host": host_facts(),
    }
    ledger.update(extra or {})
    return ledger


def _relative(root: Path, path: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def write_ledger(root: Path, ledger: Mapping[str, Any]) -> Path:
    """``root/ledger.json``, atomically; returns its path."""
    path = root / LEDGER_FILE
    write_json_atomic(path, dict(ledger))
    return path


def read_ledger(run: Path) -> dict[str, Any]:
    """The ledger of the run at ``run`` (its results root, or the ledger file itself); a
    folder without one, or a file that is not a ledger, is ``BadInputError`` naming it."""
    path = run if run.name == LEDGER_FILE else run / LEDGER_FILE
    if not run.exists():
        raise BadInputError(run, "no such run directory")
    if not path.is_file():
        raise BadInputError(run, f"not a run directory (no {LEDGER_FILE})")
    doc = read_json_file(path)
    if not isinstance(doc, dict) or doc.get("format") != LEDGER_FORMAT:
        raise BadInputError(path, f"not a {LEDGER_FORMAT} ledger")
    if not isinstance(doc.get("outputs"), dict):
        raise BadInputError(path, "ledger has no outputs table")
    return doc


def run_argv() -> list[str]:
    """The command line as typed (for a run started from ``streameval``)."""
    return [_redacted_arg(arg) for arg in sys.argv[1:]]


def _redacted_arg(arg: str) -> str:
    """A command-line word with a URL's password taken out, ``--opt=URL`` included: a ledger
    is shared with the results, a broker's password is not."""
    name, eq, value = arg.partition("=")
    if eq and name.startswith("-"):
        return f"{name}={redact_url(value)}"
    return redact_url(arg)
