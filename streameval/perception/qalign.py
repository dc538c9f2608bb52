"""The Q-Align (OneAlign) quality backend: rating-word logits of a video at 1 fps.

WorldMark scores Perceptual and Aesthetic Quality with Q-Align / OneAlign (``q-future/one-align``),
an mPLUG-Owl2 model shipped with remote code. It is asked, in video mode, "How would you rate
the {quality|aesthetics} of this video?" and the answer "The {task} of the video is" is read off
at its last position: the logits of the five rating words (``metrics.quality`` turns them into
a score). Frames are padded to a square with the image processor's mean colour first, as the
Q-Align scorer does (``expand2square``).

Weights are never downloaded (``perception.hf``): a local directory or the Hugging Face cache,
with an error naming the missing file otherwise. Two model families load through the same
path:

- ``model_type == "mplug_owl2"`` (the real OneAlign): ``AutoModelForCausalLM`` with
  ``trust_remote_code`` (its own code, from the checkpoint directory), one ``<|image|>``
  placeholder (token id −200) spliced into the prompt and the video passed as ``images=[frames]``;
- any vision-language model ``transformers`` knows (``AutoModelForImageTextToText`` +
  ``AutoProcessor``, e.g. LLaVA): one image token per frame, expanded by the processor. This is
  the path the tests run end to end on a tiny randomly initialised checkpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from streameval.core.registry import backend_registry, split_spec
from streameval.errors import BackendUnavailableError
from streameval.metrics.quality.kernels import (
    DRIFT_METRICS,
    QUALITY_TASKS,
    RATING_WORDS,
    drift_segments,
)
from streameval.perception.hf import as_rgb_uint8, import_heavy, resolve_pretrained

QALIGN_DEFAULT = "q-future/one-align"
OWL_IMAGE_TOKEN = "<|image|>"
OWL_IMAGE_TOKEN_ID = -200  # mPLUG-Owl2's IMAGE_TOKEN_INDEX: replaced by visual tokens inside
JOB = "Q-Align quality backend"


def qalign_prompt(task: str, image_tokens: str) -> str:
    """The Q-Align video prompt for ``task`` (``quality`` or ``aesthetics``)."""
    return (
        f"USER: How would you rate the {task} of this video?\n{image_tokens}\n"
        f"ASSISTANT: The {task} of the video is"
    )


def expand_to_square(
    image: npt.NDArray[np.uint8], fill: tuple[int, int, int]
) -> npt.NDArray[np.uint8]:
    """Pad to a square with ``fill``, the image centred (the shorter side's offset rounded
    down), as Q-Align's ``expand2square``."""
    h, w = image.shape[:2]
    if h == w:
        return image
    side = max(h, w)
    out = np.empty((side, side, 3), dtype=np.uint8)
    out[...] = np.asarray(fill, dtype=np.uint8)
    top, left = (side - h) // 2, (side - w) // 2
    out[top : top + h, left : left + w] = image
    return out


def _mean_fill(image_processor: Any) -> tuple[int, int, int]:
    mean = getattr(image_processor, "image_mean", None) or (0.5, 0.5, 0.5)
    r, g, b = (int(x * 255) for x in mean)
    return r, g, b


def rating_token_ids(tokenizer: Any) -> list[int]:
    """The first token of each rating word (what the model would emit next). The Q-Align
    scorer takes index 1 of the encoding with BOS, which is the same token."""
    ids: list[int] = []
    for word in RATING_WORDS:
        encoded = tokenizer(word, add_special_tokens=False)["input_ids"]
        if not encoded:
            raise BackendUnavailableError(f"{JOB}: the tokenizer has no token for {word!r}")
        ids.append(int(encoded[0]))
    return ids


class QAlign:
    """Rating-word logits of a list of RGB frames (one video) for a Q-Align task.

    ``model``: a local directory or a hub id already in the HF cache (default
    ``q-future/one-align``); ``device``: ``cpu`` or ``cuda[:N]`` (half precision on CUDA, as
    the reference).
    """

    def __init__(self, model: str | Path = QALIGN_DEFAULT, device: str | None = None) -> None:
        self._torch, transformers = import_heavy(JOB)
        torch = self._torch
        resolved = resolve_pretrained(model, job=JOB, default_repo=QALIGN_DEFAULT)
        self.model = resolved.description
        self.name = f"qalign({model})"
        self._device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self._dtype = torch.float16 if self._device.startswith("cuda") else torch.float32
        source = resolved.source
        try:
            config = transformers.AutoConfig.from_pretrained(
                source, local_files_only=True, trust_remote_code=True
            )
            self.owl = config.model_type == "mplug_owl2"
            if self.owl:
                self._tokenizer = transformers.AutoTokenizer.from_pretrained(
                    source, local_files_only=True
                )
                self._image_processor = transformers.AutoImageProcessor.from_pretrained(
                    source, local_files_only=True
                )
                self._processor = None
                net = transformers.AutoModelForCausalLM.from_pretrained(
                    source, local_files_only=True, trust_remote_code=True, dtype=self._dtype
                )
            else:
                self._processor = transformers.AutoProcessor.from_pretrained(
                    source, local_files_only=True
                )
                self._tokenizer = self._processor.tokenizer
                self._image_processor = self._processor.image_processor
                net = transformers.AutoModelForImageTextToText.from_pretrained(
                    source, local_files_only=True, dtype=self._dtype
                )
        except Exception as err:  # corrupt, incomplete or unsupported checkpoint
            raise BackendUnavailableError(
                f"{JOB}: cannot load {resolved.description}: {type(err).__name__}: {err}"
            ) from err
        self._net = net.to(self._device).eval()
        self._rating_ids = rating_token_ids(self._tokenizer)
        self._fill = _mean_fill(self._image_processor)

    def rating_logits(self, frames: list[npt.NDArray[np.uint8]], task: str) -> list[float]:
        """Logits of the five rating words after the video prompt for ``task``."""
        if not frames:
            raise ValueError(f"{self.name}: no frames to rate")
        square = [expand_to_square(as_rgb_uint8(f, self.name), self._fill) for f in frames]
        torch = self._torch
        with torch.inference_mode():
            if self.owl:
                logits = self._owl_logits(square, task)
            else:
                logits = self._processor_logits(square, task)
        out: list[float] = logits[self._rating_ids].float().cpu().numpy().astype(float).tolist()
        return out

    def _owl_logits(self, frames: list[npt.NDArray[np.uint8]], task: str) -> Any:
        torch = self._torch
        before, after = qalign_prompt(task, OWL_IMAGE_TOKEN).split(OWL_IMAGE_TOKEN)
        head = list(self._tokenizer(before)["input_ids"])  # with BOS, as tokenizer_image_token
        tail = list(self._tokenizer(after, add_special_tokens=False)["input_ids"])
        ids = [*head, OWL_IMAGE_TOKEN_ID, *tail]
        input_ids = torch.tensor([ids], device=self._device)
        pixels = self._image_processor(frames, return_tensors="pt")["pixel_values"]
        pixels = pixels.to(self._device, self._dtype)
        return self._net(input_ids, images=[pixels])["logits"][0, -1]

    def _processor_logits(self, frames: list[npt.NDArray[np.uint8]], task: str) -> Any:
        processor: Any = self._processor
        image_token = getattr(processor, "image_token", None)
        if not image_token:
            raise BackendUnavailableError(f"{self.name}: the processor has no image token")
        prompt = qalign_prompt(task, image_token * len(frames))
        inputs = processor(text=prompt, images=frames, return_tensors="pt")
        inputs = {
            k: v.to(self._device, self._dtype) if k == "pixel_values" else v.to(self._device)
            for k, v in inputs.items()
        }
        return self._net(**inputs).logits[0, -1]


def rate_episode(
    backend: QAlign, frames: list[npt.NDArray[np.uint8]]
) -> tuple[dict[str, list[float]], dict[str, list[list[float]]]]:
    """Q-Align's answers for one episode's 1-fps frames: the whole video per task (WorldMark
    columns), and each drift segment per task (WorldAtlas, docs/methods.md#rollout_imaging_drift),
    segments from
    ``metrics.quality.kernels.drift_segments``."""
    logits = {task: backend.rating_logits(frames, task) for task in QUALITY_TASKS.values()}
    segments = drift_segments(len(frames)) or []
    segment_logits = {
        task: [backend.rating_logits([frames[int(i)] for i in seg], task) for seg in segments]
        for task in DRIFT_METRICS.values()
    }
    return logits, segment_logits


QUALITY_BACKENDS = backend_registry("quality backend")
QUALITY_BACKENDS.register("qalign", "streameval.perception.qalign:QAlign")


def create_quality_backend(name: str, **kwargs: Any) -> QAlign:
    """Build the quality backend registered as ``name`` (``qalign`` takes ``model``,
    ``device``); torch/transformers are imported only here."""
    backend: QAlign = QUALITY_BACKENDS.create(name, **kwargs)
    return backend


_LOADED: dict[str, QAlign] = {}


def load_quality_backend(spec: str) -> QAlign:
    """The backend for ``spec`` (``qalign[:MODEL]``), loaded once per process: a 7B model is
    not reloaded for every episode of a run. Called from the event loop thread only."""
    if spec not in _LOADED:
        name, kwargs = split_spec(spec)
        _LOADED[spec] = create_quality_backend(name, **kwargs)
    return _LOADED[spec]
