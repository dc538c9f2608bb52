"""The Q-Align backend end to end on a tiny random checkpoint, and its missing-weights errors."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from streameval.errors import BackendUnavailableError
from streameval.metrics.quality.kernels import RATING_WORDS, normalize_rating, rating_score
from streameval.perception.qalign import (
    QAlign,
    create_quality_backend,
    expand_to_square,
    qalign_prompt,
    rate_episode,
)


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def frames(n: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (36, 60, 3), dtype=np.uint8) for _ in range(n)]


def test_expand_to_square_centres_and_fills() -> None:
    image = np.full((2, 4, 3), 9, np.uint8)
    square = expand_to_square(image, (1, 2, 3))
    assert square.shape == (4, 4, 3)
    assert (square[1:3] == 9).all()
    assert (square[0] == [1, 2, 3]).all() and (square[3] == [1, 2, 3]).all()
    tall = expand_to_square(np.zeros((5, 2, 3), np.uint8), (7, 7, 7))
    assert tall.shape == (5, 5, 3) and (tall[:, 0] == 7).all() and (tall[:, 1:3] == 0).all()


@pytest.mark.usefixtures("one_torch_thread")
def test_qalign_end_to_end_on_a_tiny_model(tiny_qalign: Path) -> None:
    """Prompt -> rating-word logits -> softmax-weighted 1–5 -> 0–100, checked against the
    same forward pass done by hand here (processor, model, last position, five ids)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    backend = create_quality_backend("qalign", model=str(tiny_qalign), device="cpu")
    assert not backend.owl
    video = frames(3)
    logits = backend.rating_logits(video, "quality")
    assert len(logits) == 5 and all(math.isfinite(v) for v in logits)
    assert backend.rating_logits(video, "quality") == logits  # no sampling: deterministic

    processor = transformers.AutoProcessor.from_pretrained(tiny_qalign)
    model = transformers.AutoModelForImageTextToText.from_pretrained(tiny_qalign).eval()
    ids = [processor.tokenizer.convert_tokens_to_ids(w) for w in RATING_WORDS]
    fill = tuple(int(x * 255) for x in processor.image_processor.image_mean)
    square = [expand_to_square(f, fill) for f in video]  # type: ignore[arg-type]
    prompt = qalign_prompt("quality", "<image>" * 3)
    inputs = processor(text=prompt, images=square, return_tensors="pt")
    assert (
        int((inputs["input_ids"] == processor.tokenizer.convert_tokens_to_ids("<image>")).sum())
        == 3 * 4
    )
    with torch.inference_mode():
        last = model(**inputs).logits[0, -1]
    by_hand = [float(last[i]) for i in ids]
    assert logits == pytest.approx(by_hand, abs=1e-6)

    e = [math.exp(v) for v in by_hand]
    x = sum(w * p for w, p in zip((5, 4, 3, 2, 1), e, strict=True)) / sum(e)
    assert rating_score(logits) == pytest.approx(x, abs=1e-9)
    reference = 100 * sum(w * p for w, p in zip((1, 0.75, 0.5, 0.25, 0), e, strict=True)) / sum(e)
    assert normalize_rating(rating_score(logits)) == pytest.approx(reference, abs=1e-9)

    # the task word and the frames reach the model
    assert backend.rating_logits(video, "aesthetics") != logits
    assert backend.rating_logits(frames(3, seed=1), "quality") != logits


@pytest.mark.usefixtures("one_torch_thread")
def test_rate_episode_scores_the_video_and_ten_segments(tiny_qalign: Path) -> None:
    backend = QAlign(str(tiny_qalign), device="cpu")
    video = frames(12)
    logits, segments = rate_episode(backend, video)
    assert set(logits) == {"quality", "aesthetics"}
    assert {k: len(v) for k, v in segments.items()} == {"quality": 10, "aesthetics": 10}
    # segment 0 of 12 frames split in 10 holds frames 0 and 1
    assert segments["quality"][0] == backend.rating_logits(video[:2], "quality")
    short_logits, short_segments = rate_episode(backend, video[:5])
    assert short_segments == {"quality": [], "aesthetics": []} and len(short_logits) == 2


def test_missing_weights_fail_fast_with_what_to_download(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailableError) as err:
        QAlign(str(tmp_path / "one-align"))
    message = str(err.value)
    assert "does not exist" in message and "hf download q-future/one-align" in message
    (tmp_path / "empty").mkdir()
    with pytest.raises(BackendUnavailableError, match=r"config\.json is missing"):
        QAlign(str(tmp_path / "empty"))
    (tmp_path / "empty" / "config.json").write_text("{}")
    with pytest.raises(BackendUnavailableError, match="no weights in"):
        QAlign(str(tmp_path / "empty"))
    with pytest.raises(BackendUnavailableError, match="not in the Hugging Face cache"):
        QAlign("q-future/one-align")
