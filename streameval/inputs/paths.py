"""Output paths built from names other people chose: sanitised, and checked to stay under root.

An episode or model name comes from ``meta.json``, a file name or a model object. It becomes
one or more path components under ``--out`` (``MODEL/016_014`` is two levels, on purpose), so
each component is made safe: no separators, no ``..``, no NUL or control characters, no lone
surrogates (which no file system can encode), no leading dot, at most ``MAX_COMPONENT``
characters (with a short hash so that two long names stay distinct). Then the joined path is
resolved and must still lie under the resolved root.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import unicodedata
from pathlib import Path

from streameval.errors import BadInputError, one_line

MAX_COMPONENT = 100
MAX_DEPTH = 4
_UNSAFE = re.compile(r"[^\w.+=@,()\[\] -]+", re.ASCII)


def _ascii_safe(text: str) -> str:
    # Lone surrogates and other unencodable code points become '_'; accents fold to ASCII.
    cleaned = text.encode("utf-8", "replace").decode("utf-8")
    folded = unicodedata.normalize("NFKD", cleaned).encode("ascii", "ignore").decode("ascii")
    return _UNSAFE.sub("_", folded)


def present(path: Path) -> bool:
    """Something is at ``path``, even a broken link or a folder: an optional file that exists
    but cannot be read is an error, never silently absent."""
    try:
        return path.exists() or path.is_symlink()
    except OSError:  # a name too long for the file system: nothing can be there
        return False


def safe_component(text: str) -> str:
    """One file-name component made from arbitrary text; never empty, ``.`` or ``..``.

    A readable name stays as it is; a name cut to ``MAX_COMPONENT`` characters gets a hash of
    the original, so two long names that share a prefix still get two folders.
    """
    safe = _ascii_safe(text).strip(" ._") or "_"
    if len(safe) > MAX_COMPONENT:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        safe = f"{safe[: MAX_COMPONENT - 9]}-{digest}"
    return safe


def safe_relative(name: str) -> Path:
    """A relative path from a name that may hold ``/`` levels (``MODEL/016_014``)."""
    parts = [p for p in re.split(r"[/\\]+", name) if p not in ("", ".", "..")]
    if not parts:
        parts = ["_"]
    if len(parts) > MAX_DEPTH:
        parts = [*parts[: MAX_DEPTH - 1], "_".join(parts[MAX_DEPTH - 1 :])]
    return Path(*(safe_component(p) for p in parts))


def path_under(root: Path, name: str) -> Path:
    """``root / safe_relative(name)``, refused when it resolves outside ``root``.

    Resolution follows symlinks already on disk: a link inside ``--out`` that points elsewhere
    is caught here, not after the episode was written through it.
    """
    candidate = root / safe_relative(name)
    resolved_root = root.resolve()
    try:
        resolved = candidate.resolve()
    except (OSError, RuntimeError) as exc:  # symlink loops
        raise BadInputError(candidate, f"cannot resolve ({one_line(str(exc))})") from None
    if not resolved.is_relative_to(resolved_root):
        raise BadInputError(candidate, f"resolves outside the output folder {root}")
    return candidate


def check_output_dir(root: Path, flag: str = "--out") -> Path:
    """``root`` is, or can become, a writable directory; checked before any video is decoded."""
    try:
        return _check_output_dir(root, flag)
    except (OSError, RuntimeError) as exc:  # a name too long, a symlink loop
        message = getattr(exc, "strerror", None) or str(exc)
        raise BadInputError(flag, f"{root}: {one_line(message)}") from None


def missing_dirs(root: Path) -> list[Path]:
    """The folders from ``root`` up that do not exist yet (deepest first): what
    ``check_output_dir`` is about to create, so that a run which writes nothing into them can
    take them away again (``remove_if_empty``)."""
    missing: list[Path] = []
    probe = root
    with contextlib.suppress(OSError):
        while not probe.exists() and not probe.is_symlink() and probe.parent != probe:
            missing.append(probe)
            probe = probe.parent
    return missing


def remove_if_empty(folders: list[Path]) -> None:
    """Remove ``folders`` (deepest first) while they are empty: a run refused for bad input
    leaves no empty ``--out`` behind, and one that wrote anything keeps all of it."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # not empty (or gone): what is in it stays
            return


def _check_output_dir(root: Path, flag: str) -> Path:
    probe = root
    root.resolve(strict=False)  # raises on a symlink loop
    while not probe.exists():
        if probe.is_symlink():
            raise BadInputError(flag, f"{root}: {probe} is a broken symbolic link")
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        raise BadInputError(flag, f"{root}: {probe} is not a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise BadInputError(flag, f"{root}: {probe} is not writable")
    if str(probe.resolve()).startswith(("/proc", "/sys", "/dev")):
        raise BadInputError(flag, f"{root}: lies in a virtual file system ({probe.resolve()})")
    root.mkdir(parents=True, exist_ok=True)
    return root
