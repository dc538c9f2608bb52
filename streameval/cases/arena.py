"""WorldMark's ``arena_inputs/`` folder, read as published: sets of images, rows of actions
and captions, per-image intrinsics.

The layout (``arena_inputs/README.txt`` of the public WorldMark repository)::

    action_protocol.txt                        action id (1..15) -> keys
    {view}/{domain}/NNN.jpg                    the starting images, 000 .. N-1
    {view}/{domain}_intrinsics/NNN_intrinsics.npy   (4,) float32 [fx, fy, cx, cy]
    {view}/{domain}_action.txt                 row i = image i's action ids ("1, 6, 9, 11, 13")
    {view}/prompt_{domain}.txt                 row i = image i's caption

A set is ``{view}/{domain}`` (``first_view/real``). The published sets hold 25 images with 5
actions each, but nothing here counts on it: any number of images, any number of actions a
row, as long as a set's files agree (as many action rows and caption rows as images, an
intrinsics file for every image when the set has an intrinsics folder; the published
``style`` sets have one too). Rows are matched to images by number, so the images must be
numbered 0 .. N-1 without a gap. Each (image, action) is one case named as WorldMark names
its video, ``{image:03d}_{action:03d}``. A caption is its row as written, without the
whitespace around it (a Windows line end's carriage return included). When
``action_protocol.txt`` is there, its table must be the one streameval drives
(``protocol.suites.WORLDMARK``): inputs of another revision would otherwise be scored
against the wrong keys.

Everything is checked here, before any episode runs; each problem is one ``BadInputError``
line naming the file and the row.
"""

from __future__ import annotations

import re
from pathlib import Path

from streameval.cases.model import Case, CaseSet, case_name, parse_intrinsics
from streameval.errors import BadInputError
from streameval.inputs.arrays import load_npy
from streameval.inputs.jsonfile import read_text_bounded
from streameval.inputs.paths import present
from streameval.protocol.suites import WORLDMARK, WORLDMARK_SUITE

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
ACTION_SUFFIX = "_action.txt"
INTRINSICS_SUFFIX = "_intrinsics"
PROTOCOL_FILE = "action_protocol.txt"
FOLDER_NAME = "arena_inputs"

_ACTION_SEPARATORS = re.compile(r"[,\s]+")
_PROTOCOL_ROW = re.compile(r"^\s*(\d{1,3})\s*:\s*([A-Za-z]+)\b")


def find_arena_root(path: Path) -> Path:
    """``path`` itself when it holds sets, or its ``arena_inputs/`` folder (a checkout of the
    WorldMark repository given as the case folder)."""
    if not _set_names(path) and (path / FOLDER_NAME).is_dir():
        return path / FOLDER_NAME
    return path


def _visible(path: Path) -> bool:
    return not path.name.startswith(".")


def _set_names(root: Path) -> list[tuple[str, str]]:
    """Every ``(view, domain)`` with a ``{view}/{domain}_action.txt``, sorted."""
    found: list[tuple[str, str]] = []
    try:
        views = sorted(p for p in root.iterdir() if p.is_dir() and _visible(p))
    except OSError:
        return found
    for view in views:
        for action_file in sorted(view.glob(f"*{ACTION_SUFFIX}")):
            if _visible(action_file):
                found.append((view.name, action_file.name.removesuffix(ACTION_SUFFIX)))
    return found


def text_rows(path: Path) -> list[str]:
    """The rows of a text file, stripped; blank rows at the end (a final newline) dropped,
    a blank row before the last one kept (it is refused by the caller, as a row for no
    image would shift every later row onto the wrong image)."""
    text = read_text_bounded(path).removeprefix("\ufeff")
    rows = [row.strip() for row in text.split("\n")]
    while rows and not rows[-1]:
        rows.pop()
    return rows


def parse_action_row(row: str, path: Path, number: int) -> tuple[int, ...]:
    """The action ids of row ``number`` (1-based) of an ``*_action.txt``: numbers 1..15,
    separated by commas or spaces, none twice."""
    where = f"row {number} (image {number - 1:03d})"
    tokens = [t for t in _ACTION_SEPARATORS.split(row) if t]
    if not tokens:
        raise BadInputError(path, f"{where} is empty")
    ids: list[int] = []
    for token in tokens:
        if not token.isascii() or not token.isdigit() or len(token) > 3:
            raise BadInputError(path, f"{where}: {token[:20]!r} is not an action id (1-15)")
        action = int(token)
        if action not in WORLDMARK:
            raise BadInputError(path, f"{where}: action {action} is outside 1-15")
        if action in ids:
            raise BadInputError(path, f"{where}: action {action} twice")
        ids.append(action)
    return tuple(ids)


def check_action_protocol(root: Path) -> None:
    """An ``action_protocol.txt`` beside the sets must map each id to the keys streameval
    drives for it."""
    path = root / PROTOCOL_FILE
    if not present(path):
        return
    for row in text_rows(path):
        match = _PROTOCOL_ROW.match(row)
        if not match:
            continue
        action, keys = int(match.group(1)), match.group(2).upper()
        known = WORLDMARK.get(action)
        if known != keys:
            expected = f"{known!r}" if known else "no action"
            raise BadInputError(
                path,
                f"action {action} is {keys!r} here, {expected} in the WorldMark protocol "
                "streameval drives: these inputs are of another revision",
            )


def _numbered_images(folder: Path, set_name: str) -> list[Path]:
    """The images of a set folder in order 0 .. N-1 (files whose name is a number)."""
    if not folder.is_dir():
        raise BadInputError(folder, f"missing: the images of set {set_name}")
    by_number: dict[int, Path] = {}
    for path in sorted(folder.iterdir()):
        if not _visible(path) or not path.stem.isascii() or not path.stem.isdigit():
            continue
        if path.suffix.lower() not in IMAGE_SUFFIXES:
            raise BadInputError(path, f"not an image name (expected {', '.join(IMAGE_SUFFIXES)})")
        number = int(path.stem)
        if number in by_number:
            raise BadInputError(
                path, f"a second image numbered {number:03d} (also {by_number[number].name})"
            )
        by_number[number] = path
    if not by_number:
        raise BadInputError(
            folder, f"no images (expected 000.jpg, 001.jpg, ... for set {set_name})"
        )
    highest = max(by_number)
    for expected in range(len(by_number)):  # a gap, if any, shows below len(by_number)
        if expected not in by_number:
            suffix = by_number[highest].suffix
            raise BadInputError(
                folder / f"{expected:03d}{suffix}",
                f"missing image (images run to {highest:03d}; row i of the action and caption "
                "files is image i)",
            )
    return [by_number[i] for i in range(len(by_number))]


def _check_row_count(path: Path, rows: int, images: int, what: str) -> None:
    if rows != images:
        fewer = "fewer" if rows < images else "more"
        raise BadInputError(
            path, f"{rows} {what} rows for {images} images ({fewer} rows than images)"
        )


def _intrinsics(folder: Path, images: list[Path]) -> list[tuple[float, float, float, float] | None]:
    """Each image's intrinsics when the set has an intrinsics folder, else None for each."""
    if not present(folder):
        return [None] * len(images)
    if not folder.is_dir():
        raise BadInputError(folder, "not a folder (expected NNN_intrinsics.npy files)")
    out: list[tuple[float, float, float, float] | None] = []
    for image in images:
        path = folder / f"{image.stem}{INTRINSICS_SUFFIX}.npy"
        if not present(path):
            raise BadInputError(
                path, f"missing: the intrinsics of {image.parent.name}/{image.name}"
            )
        out.append(parse_intrinsics(load_npy(path), path))
    return out


def _read_set(root: Path, view: str, domain: str) -> list[Case]:
    set_name = f"{view}/{domain}"
    view_dir = root / view
    images = _numbered_images(view_dir / domain, set_name)
    action_path = view_dir / f"{domain}{ACTION_SUFFIX}"
    action_rows = text_rows(action_path)
    _check_row_count(action_path, len(action_rows), len(images), "action")
    actions = [parse_action_row(row, action_path, i + 1) for i, row in enumerate(action_rows)]
    prompt_path = view_dir / f"prompt_{domain}.txt"
    prompts = text_rows(prompt_path)
    _check_row_count(prompt_path, len(prompts), len(images), "caption")
    for i, prompt in enumerate(prompts):
        if not prompt:
            raise BadInputError(prompt_path, f"row {i + 1} (image {i:03d}) is empty")
    intrinsics = _intrinsics(view_dir / f"{domain}{INTRINSICS_SUFFIX}", images)
    cases: list[Case] = []
    for index, image in enumerate(images):
        for action in actions[index]:
            cases.append(
                Case(
                    name=case_name(index, action),
                    set=set_name,
                    suite=WORLDMARK_SUITE,
                    image_id=f"{index:03d}",
                    action=action,
                    keys=WORLDMARK[action],
                    image_path=image,
                    prompt=prompts[index],
                    intrinsics=intrinsics[index],
                    image_index=index,
                    origin=f"{action_path.name} row {index + 1}",
                )
            )
    return cases


def _orphan_image_folders(root: Path, sets: list[tuple[str, str]]) -> None:
    """A folder of numbered images with no action file beside it is a set whose action file
    is missing, not a folder to skip."""
    known = {(root / view / domain) for view, domain in sets}
    for view in sorted(p for p in root.iterdir() if p.is_dir() and _visible(p)):
        for folder in sorted(p for p in view.iterdir() if p.is_dir() and _visible(p)):
            if folder in known or folder.name.endswith(INTRINSICS_SUFFIX):
                continue
            if any(
                p.stem.isdigit() and p.suffix.lower() in IMAGE_SUFFIXES for p in folder.iterdir()
            ):
                missing = view / f"{folder.name}{ACTION_SUFFIX}"
                raise BadInputError(
                    missing, f"missing: the actions of the images in {view.name}/{folder.name}/"
                )


def index_arena(path: Path) -> CaseSet:
    """The cases of an ``arena_inputs/`` folder, every text and intrinsics file checked; the
    images are found but not yet read (``images.attach_image_facts`` reads them)."""
    if not path.is_dir():
        raise BadInputError(path, "missing" if not present(path) else "not a folder")
    root = find_arena_root(path)
    sets = _set_names(root)
    if not sets:
        raise BadInputError(
            path,
            "no case sets: expected WorldMark's arena_inputs layout ({view}/{domain}/NNN.jpg "
            "beside {view}/{domain}_action.txt and {view}/prompt_{domain}.txt)",
        )
    check_action_protocol(root)
    try:
        _orphan_image_folders(root, sets)
    except OSError as exc:
        raise BadInputError(root, f"cannot list ({exc.strerror or exc})") from None
    cases = [case for view, domain in sets for case in _read_set(root, view, domain)]
    return CaseSet(tuple(cases), root, "arena_inputs")
