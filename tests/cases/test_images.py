"""Case images: decoding, fingerprints, bad files, and the first-frame similarity that says
whether a server started from the image (``streameval/cases/images.py``)."""

from __future__ import annotations

import hashlib
import struct
import zlib
from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt
import pytest

from streameval.cases.images import (
    HONOURED_SIMILARITY,
    MAX_IMAGE_PIXELS,
    first_frame_similarity,
    honoured,
    image_mime,
    inspect_image,
    load_image,
)
from streameval.errors import BadInputError, InvalidDataError
from tests.cases.arena_synth import scene, write_image

Image = npt.NDArray[np.uint8]


def encode(path: Path, pixels: npt.NDArray[np.generic], ext: str | None = None) -> Path:
    ok, data = cv2.imencode(ext or path.suffix, pixels)
    assert ok
    path.write_bytes(data.tobytes())
    return path


def test_rgb_pixels_at_any_size(tmp_path: Path) -> None:
    rgb = np.zeros((97, 161, 3), np.uint8)
    rgb[..., 0] = 200  # red in RGB
    back = load_image(write_image(tmp_path / "odd.png", rgb))
    assert back.shape == (97, 161, 3) and back.dtype == np.uint8
    assert back[0, 0].tolist() == [200, 0, 0]
    assert load_image(write_image(tmp_path / "one.png", rgb[:1, :1])).shape == (1, 1, 3)
    assert load_image(write_image(tmp_path / "thin.jpg", scene(1, 2000, 3))).shape == (3, 2000, 3)


def test_grey_alpha_and_16_bit_images_become_rgb(tmp_path: Path) -> None:
    grey = load_image(encode(tmp_path / "g.png", np.full((5, 7), 90, np.uint8)))
    assert grey.shape == (5, 7, 3) and (grey == 90).all()
    bgra = np.zeros((4, 4, 4), np.uint8)
    bgra[..., 2], bgra[..., 3] = 255, 10
    assert load_image(encode(tmp_path / "a.png", bgra))[0, 0].tolist() == [255, 0, 0]
    deep = load_image(encode(tmp_path / "d.png", np.full((3, 3, 3), 65535, np.uint16)))
    assert deep.dtype == np.uint8 and (deep == 255).all()


def test_fingerprint_is_the_file_bytes_and_the_type_is_the_content(tmp_path: Path) -> None:
    path = encode(tmp_path / "looks_like.jpg", scene(3, 40, 30), ".png")  # a PNG named .jpg
    facts = inspect_image(path)
    assert facts.mime == "image/png" == image_mime(path.read_bytes())
    assert facts.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert (facts.width, facts.height) == (40, 30)
    assert image_mime(b"GIF89a") is None


def _png_claiming(width: int, height: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = struct.pack(">I", 13) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    return b"\x89PNG\r\n\x1a\n" + chunk + struct.pack(">I", 0) + b"IEND\xaeB`\x82"


def test_bad_image_files_are_one_line_each(tmp_path: Path) -> None:
    good = write_image(tmp_path / "good.png", scene(4, 32, 24)).read_bytes()
    jpeg = write_image(tmp_path / "good.jpg", scene(4, 32, 24)).read_bytes()
    cases = {
        "huge.png": (_png_claiming(60000, 60000),
                     f"image of 60000x60000 pixels (at most {MAX_IMAGE_PIXELS:,} pixels)"),
        "zero.png": (_png_claiming(0, 10), "image of 0x10 pixels"),
        "cut.png": (good[: len(good) - 20], "truncated PNG (no IEND chunk)"),
        "cut.jpg": (jpeg[: len(jpeg) - 30],
                    "truncated JPEG (no end-of-image marker after its last scan)"),
        "head.jpg": (jpeg[:40], "unreadable image/jpeg (no image size in its header)"),
        "empty.jpg": (b"", "not a JPEG or PNG image"),
        "lie.png": (_png_claiming(8, 8), "unreadable image/png"),
    }  # fmt: skip
    for name, (data, problem) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(BadInputError) as err:
            load_image(tmp_path / name)
        assert str(err.value) == f"{tmp_path / name}: {problem}", name
    with pytest.raises(BadInputError) as err:
        load_image(tmp_path / "nope.jpg")
    assert str(err.value) == f"{tmp_path / 'nope.jpg'}: missing image"


# --- first-frame similarity ------------------------------------------------------------------


def jpeg(rgb: Image, quality: int) -> Image:
    ok, data = cv2.imencode(".jpg", rgb, [cv2.IMWRITE_JPEG_QUALITY, quality])
    assert ok
    out: Image = cv2.imdecode(data, cv2.IMREAD_UNCHANGED)
    return out


def server_frame(
    image: Image, size: tuple[int, int] = (640, 360), shift: tuple[float, float] = (0, 0),
    zoom: float = 1.0, quality: int = 50,
) -> Image:  # fmt: skip
    """What a server that starts from ``image`` sends first: the image centre-cropped to its
    own aspect, moved a little (``shift`` in frame pixels, ``zoom`` about the centre),
    resized to its resolution and JPEG-compressed."""
    fw, fh = size
    h, w = image.shape[:2]
    if w / h > fw / fh:
        cw = round(h * fw / fh)
        crop = image[:, (w - cw) // 2 : (w - cw) // 2 + cw]
    else:
        ch = round(w * fh / fw)
        crop = image[(h - ch) // 2 : (h - ch) // 2 + ch]
    ch, cw = crop.shape[:2]
    m = cv2.getRotationMatrix2D(((cw - 1) / 2, (ch - 1) / 2), 0, zoom)
    m[:, 2] += (shift[0] * cw / fw, shift[1] * ch / fh)
    moved = cv2.warpAffine(crop, m, (cw, ch), borderMode=cv2.BORDER_REFLECT)
    return jpeg(cv2.resize(moved, size, interpolation=cv2.INTER_AREA), quality)


MOVES = [((0, 0), 1.0), ((6, -4), 1.0), ((0, 0), 1.05), ((8, 5), 1.05), ((-10, 0), 0.95),
         ((12, 8), 1.08), ((0, 0), 0.92)]  # fmt: skip
SIZES = [(640, 360), (832, 480), (512, 512), (320, 240)]


def test_the_image_after_jpeg_and_a_little_motion_scores_high() -> None:
    scores = []
    for seed in range(3):
        image = scene(seed, 960, 720)
        for size in SIZES:
            for shift, zoom in MOVES:
                scores.append(first_frame_similarity(image, server_frame(image, size, shift, zoom)))
    assert min(scores) >= 0.9 > HONOURED_SIMILARITY + 0.15, min(scores)


def test_other_pictures_score_low() -> None:
    from streameval.worlds.procedural_world import ProceduralWorld

    world_view = ProceduralWorld().step("-").image
    scores = []
    for seed in range(6):
        image = scene(seed, 1024, 768)
        for size in SIZES:
            scores.append(
                first_frame_similarity(image, server_frame(scene(500 + seed, 1024, 768), size))
            )
        scores.append(first_frame_similarity(image, world_view))
        scores.append(first_frame_similarity(image, np.full((360, 640, 3), 128, np.uint8)))
        scores.append(first_frame_similarity(world_view, server_frame(image)))
    assert max(scores) <= 0.5 < HONOURED_SIMILARITY - 0.15, max(scores)


def test_square_style_images_and_stretching_servers() -> None:
    image = scene(11, 1024, 1024)
    assert first_frame_similarity(image, server_frame(image, (640, 360))) > 0.9
    stretched = jpeg(cv2.resize(image, (640, 360), interpolation=cv2.INTER_AREA), 50)
    assert honoured(first_frame_similarity(image, stretched))


def test_flat_pictures_and_odd_shapes() -> None:
    grey = np.full((48, 64, 3), 120, np.uint8)
    assert first_frame_similarity(grey, grey[:30]) == 1.0  # nothing to tell them apart
    assert first_frame_similarity(grey, grey + 50) == 0.0
    assert first_frame_similarity(scene(1, 64, 48), grey) == 0.0
    tiny = scene(2, 1, 1)
    for image, frame in [(tiny, tiny), (scene(3, 4000, 2), scene(3, 2, 4000)), (tiny, grey)]:
        assert 0.0 <= first_frame_similarity(image, frame) <= 1.0
    gray_frame = cv2.cvtColor(scene(5, 320, 180), cv2.COLOR_RGB2GRAY)
    assert first_frame_similarity(scene(5, 320, 180), gray_frame) > 0.95
    with pytest.raises(InvalidDataError, match="frame of shape"):
        first_frame_similarity(grey, np.zeros((0, 4, 3), np.uint8))
    with pytest.raises(InvalidDataError, match="dtype float32"):
        first_frame_similarity(grey, grey.astype(np.float32))
