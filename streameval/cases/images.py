"""Case images: read and checked once before any episode, and compared with a first frame.

A benchmark's starting image travels to a server as its file bytes (inline base64, an upload,
a path), so what identifies it is the sha256 of those bytes and its MIME type as sniffed from
the content (a ``.jpg`` that is a PNG is sent as a PNG). It is decoded here anyway, before any
episode runs, so that a truncated or unreadable file is one ``BadInputError`` line up front
rather than a server's error half way through a run of hundreds of cases: OpenCV decodes a
truncated JPEG without complaint (grey bottom rows), so the end-of-image marker is checked
too, and the pixel count is read from the header before anything large is allocated.

``first_frame_similarity`` answers "did the server start from our image?" (see its docstring
for why it is built the way it is); ``HONOURED_SIMILARITY`` is where the answer flips, chosen
from ``tests/cases/test_images.py``.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt

from streameval.cases.model import Case
from streameval.errors import BadInputError, InvalidDataError, one_line

# WorldMark's largest image is 1920x1200 (2.3 MP); a 50 MP still is a camera original. Past
# that a header is refused before decoding, so a small file claiming 60000x60000 costs nothing.
MAX_IMAGE_PIXELS = 50_000_000
MAX_IMAGE_BYTES = 64 * 1024 * 1024

JPEG_MIME = "image/jpeg"
PNG_MIME = "image/png"
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_END = b"IEND\xaeB`\x82"
_JPEG_SOS = b"\xff\xda"
_JPEG_EOI = b"\xff\xd9"
# Start-of-frame markers (C0-CF except DHT C4, JPG C8, DAC CC): they carry the image size.
_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}

# first_frame_similarity: the analysis picture's long side, the shifts searched (pixels of the
# analysis picture each way: 5 of 96 is ~5 % of the width) and the zooms (a first chunk that
# walks forward or back a little). Band-pass: sigma of the fine blur (takes out JPEG blocks and
# noise) and of the coarse one (takes out the lighting gradient that any two photographs share).
ANALYSIS_SIDE = 96
MAX_SHIFT = 5
ZOOMS = (1.0, 1.05, 1.1)
FINE_SIGMA = 1.0
COARSE_SIGMA = 12.0
# A picture whose grey levels spread less than this (of 255) is flat: a loading screen.
FLAT_STD = 2.0
# The first frame starts from the case image when first_frame_similarity is at least this.
# Measured in tests/cases/test_images.py: the image centre-cropped to a server's aspect,
# re-encoded at JPEG q=50, shifted up to 12 px and zoomed 0.92-1.08 scores 0.96 at worst
# (asserted >= 0.9); another seeded scene, a flat grey frame and the procedural world's view
# score 0.30 at best (asserted <= 0.5; 0.42 over 30 seeded pairs). 0.7 sits between.
HONOURED_SIMILARITY = 0.7


@dataclass(frozen=True, slots=True)
class ImageFacts:
    """What identifies an image file: the sha256 of its bytes, its MIME type (from the
    content), and its size ``(width, height)`` in pixels."""

    sha256: str
    mime: str
    width: int
    height: int


def image_mime(data: bytes) -> str | None:
    """``image/jpeg`` or ``image/png`` from the first bytes, or None for anything else."""
    if data.startswith(b"\xff\xd8\xff"):
        return JPEG_MIME
    if data.startswith(_PNG_SIGNATURE):
        return PNG_MIME
    return None


def _png_size(data: bytes) -> tuple[int, int] | None:
    # signature (8), IHDR length (4), "IHDR" (4), width (4), height (4)
    if len(data) < 24 or data[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker == 0x01 or 0xD0 <= marker <= 0xD8:  # standalone markers
            at += 2
            continue
        if marker == 0xDA:  # start of scan before any frame header
            return None
        (length,) = struct.unpack(">H", data[at + 2 : at + 4])
        if marker in _JPEG_SOF:
            if at + 9 > len(data):
                return None
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return int(width), int(height)
        if length < 2:
            return None
        at += 2 + length
    return None


def read_image_bytes(path: Path) -> bytes:
    """The bytes of an image file: a regular file, readable, at most ``MAX_IMAGE_BYTES``."""
    if not path.is_file():
        what = "a directory" if path.is_dir() else "not a regular file (or a broken link)"
        raise BadInputError(path, what if path.exists() or path.is_symlink() else "missing image")
    try:
        with path.open("rb") as f:
            data = f.read(MAX_IMAGE_BYTES + 1)
    except OSError as exc:
        raise BadInputError(path, f"cannot read ({one_line(exc.strerror or str(exc))})") from None
    if len(data) > MAX_IMAGE_BYTES:
        raise BadInputError(path, f"image larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MB")
    return data


def decode_image(data: bytes, source: object) -> npt.NDArray[np.uint8]:
    """The RGB uint8 pixels ``(H, W, 3)`` of JPEG or PNG ``data`` (grey, alpha and 16-bit
    images are converted; EXIF orientation is not applied, as a server reading the same bytes
    with most libraries does not). ``source`` names the file in errors."""
    return _decode(data, source)[0]


def _decode(data: bytes, source: object) -> tuple[npt.NDArray[np.uint8], str]:
    mime = image_mime(data)
    if mime is None:
        raise BadInputError(source, "not a JPEG or PNG image")
    size = _jpeg_size(data) if mime == JPEG_MIME else _png_size(data)
    if size is None:
        raise BadInputError(source, f"unreadable {mime} (no image size in its header)")
    width, height = size
    if width < 1 or height < 1:
        raise BadInputError(source, f"image of {width}x{height} pixels")
    if width * height > MAX_IMAGE_PIXELS:
        raise BadInputError(
            source, f"image of {width}x{height} pixels (at most {MAX_IMAGE_PIXELS:,} pixels)"
        )
    # Truncation: OpenCV fills a JPEG's missing rows with grey and says so only on stderr.
    if mime == JPEG_MIME and data.rfind(_JPEG_EOI) < data.rfind(_JPEG_SOS):
        raise BadInputError(source, "truncated JPEG (no end-of-image marker after its last scan)")
    if mime == PNG_MIME and _PNG_END not in data:
        raise BadInputError(source, "truncated PNG (no IEND chunk)")
    flags = cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION
    try:
        bgr = cv2.imdecode(np.frombuffer(data, np.uint8), flags)
    except cv2.error as exc:
        raise BadInputError(source, f"unreadable {mime} ({one_line(str(exc))[:120]})") from None
    if bgr is None or bgr.ndim != 3 or bgr.shape[2] != 3:
        raise BadInputError(source, f"unreadable {mime}")
    if (bgr.shape[1], bgr.shape[0]) != (width, height):
        raise BadInputError(
            source,
            f"unreadable {mime} (header says {width}x{height}, "
            f"decoded {bgr.shape[1]}x{bgr.shape[0]})",
        )
    rgb: npt.NDArray[np.uint8] = np.ascontiguousarray(bgr[:, :, ::-1])
    return rgb, mime


def load_image(path: Path) -> npt.NDArray[np.uint8]:
    """A case image as RGB uint8 ``(H, W, 3)``, any size."""
    return decode_image(read_image_bytes(path), path)


def inspect_image(path: Path) -> ImageFacts:
    """Read, decode (to prove it can be) and fingerprint the image at ``path``."""
    data = read_image_bytes(path)
    rgb, mime = _decode(data, path)
    return ImageFacts(hashlib.sha256(data).hexdigest(), mime, rgb.shape[1], rgb.shape[0])


def attach_image_facts(cases: Iterable[Case]) -> tuple[Case, ...]:
    """``cases`` with their image facts filled in; each distinct file is read once (a
    WorldMark image is the start of five cases)."""
    facts: dict[Path, ImageFacts] = {}
    out: list[Case] = []
    for case in cases:
        if case.image_path is None:
            out.append(case)
            continue
        if case.image_path not in facts:
            facts[case.image_path] = inspect_image(case.image_path)
        f = facts[case.image_path]
        out.append(
            replace(case, image_sha256=f.sha256, image_mime=f.mime, image_size=(f.width, f.height))
        )
    return tuple(out)


# --- did the server start from our image? ---------------------------------------------------


def _grey(picture: npt.NDArray[Any], what: str) -> npt.NDArray[np.float32]:
    arr = np.asarray(picture)
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] not in (3, 4)) or not arr.size:
        raise InvalidDataError(f"{what} of shape {arr.shape} is not an image")
    if arr.dtype != np.uint8:
        raise InvalidDataError(f"{what} has dtype {arr.dtype}, expected uint8")
    if arr.ndim == 3:
        arr = cv2.cvtColor(np.ascontiguousarray(arr[:, :, :3]), cv2.COLOR_RGB2GRAY)
    return arr.astype(np.float32)


def _centre_crop(grey: npt.NDArray[np.float32], aspect: float) -> npt.NDArray[np.float32]:
    """The largest centred region of ``grey`` with width / height = ``aspect``."""
    h, w = grey.shape
    if w / h > aspect:
        new_w = min(w, max(1, round(h * aspect)))
        x = (w - new_w) // 2
        return grey[:, x : x + new_w]
    new_h = min(h, max(1, round(w / aspect)))
    y = (h - new_h) // 2
    return grey[y : y + new_h]


def _analysis_size(aspect: float) -> tuple[int, int]:
    """(width, height) of the analysis picture: long side ``ANALYSIS_SIDE``, the short side
    never so small that the shift search has nothing left to compare."""
    least = 2 * MAX_SHIFT + 6
    if aspect >= 1.0:
        return ANALYSIS_SIDE, max(least, round(ANALYSIS_SIDE / aspect))
    return max(least, round(ANALYSIS_SIDE * aspect)), ANALYSIS_SIDE


def _band_pass(grey: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    fine = cv2.GaussianBlur(grey, (0, 0), FINE_SIGMA)
    coarse = cv2.GaussianBlur(grey, (0, 0), COARSE_SIGMA)
    out: npt.NDArray[np.float32] = fine - coarse
    return out


def _zoom(picture: npt.NDArray[np.float32], factor: float) -> npt.NDArray[np.float32]:
    """The centre of ``picture`` enlarged by ``factor`` (>= 1), at the same size."""
    if factor == 1.0:
        return picture
    h, w = picture.shape
    m = cv2.getRotationMatrix2D(((w - 1) / 2, (h - 1) / 2), 0.0, factor)
    out = cv2.warpAffine(picture, m, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
    return np.asarray(out, dtype=np.float32)


def _shrink(grey: npt.NDArray[np.float32], size: tuple[int, int]) -> npt.NDArray[np.float32]:
    return np.asarray(cv2.resize(grey, size, interpolation=cv2.INTER_AREA), dtype=np.float32)


def _best_ncc(search: npt.NDArray[np.float32], frame: npt.NDArray[np.float32]) -> float | None:
    """Highest normalised cross-correlation of ``frame``'s centre (``MAX_SHIFT`` trimmed each
    side) over every placement inside ``search``; None when either has no texture."""
    m = MAX_SHIFT
    template = frame[m:-m, m:-m]
    if float(template.std()) < 1e-3 or float(search.std()) < 1e-3:
        return None
    scores = cv2.matchTemplate(search, template, cv2.TM_CCOEFF_NORMED)
    best = float(np.nanmax(scores)) if np.isfinite(scores).any() else None
    return best


def first_frame_similarity(image: npt.NDArray[Any], frame: npt.NDArray[Any]) -> float:
    """How surely ``frame`` (a first frame the server sent) shows ``image`` (the case image),
    in [0, 1]; both uint8, RGB or grey, any sizes.

    The image is centre-cropped to the frame's aspect (what most servers do to fit their
    resolution; comparing with the whole image stretched is tried too) and both are resized
    to a small analysis picture (96 px on the long side), turned grey and band-passed: a fine
    blur takes out JPEG blocking and sensor noise, subtracting a coarse blur takes out the
    smooth lighting gradient (bright sky above, dark ground below) that two unrelated
    photographs share and that would otherwise correlate them. The score is the best
    normalised cross-correlation over shifts of up to ~5 % of the width and zooms of up to
    10 % either way, because a first chunk may already have moved: correlation is invariant
    to the brightness and contrast a decoder or a model's colour handling changes. A
    negative correlation counts as 0. A flat picture (a loading screen) has no texture to
    correlate: it scores 1 only against a flat image of about the same grey, else 0.
    """
    image_grey = _grey(image, "case image")
    frame_grey = _grey(frame, "frame")
    fh, fw = frame_grey.shape
    aspect = fw / fh
    size = _analysis_size(aspect)
    frame_small = _shrink(frame_grey, size)
    images_small = [
        _shrink(_centre_crop(image_grey, aspect), size),
        _shrink(image_grey, size),  # stretched to fit
    ]
    flat_frame = float(frame_small.std()) < FLAT_STD
    flat_image = float(images_small[0].std()) < FLAT_STD
    if flat_frame or flat_image:
        same_grey = abs(float(frame_small.mean()) - float(images_small[0].mean())) < 4 * FLAT_STD
        return 1.0 if flat_frame and flat_image and same_grey else 0.0
    frame_band = _band_pass(frame_small)
    best = -1.0
    for image_small in images_small:
        image_band = _band_pass(image_small)
        for factor in ZOOMS:
            # walked forward: the frame is the image's centre enlarged; walked back: the reverse
            pairs = [(_zoom(image_band, factor), frame_band)]
            if factor != 1.0:
                pairs.append((image_band, _zoom(frame_band, factor)))
            for search, seen in pairs:
                score = _best_ncc(search, seen)
                if score is not None:
                    best = max(best, score)
    return min(1.0, max(0.0, best))


def honoured(similarity: float) -> bool:
    """Whether a first frame with this ``first_frame_similarity`` started from the image."""
    return similarity >= HONOURED_SIMILARITY
