"""Shared fixtures: offline hub, and short procedural-world episodes."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# `--cuts auto` (the default) means PySceneDetect here, in this process and in the CLI
# subprocesses the tests start: a TransNetV2 worker (torch) per episode tripled the suite's
# time on two cores. TransNetV2 itself is tested by name (tests/perception/test_cuts.py,
# tests/engine/test_memory_validity.py); test_auto_cuts_follow_the_environment checks `auto`.
os.environ.setdefault("STREAMEVAL_CUTS", "scenedetect-adaptive")


def pytest_configure(config: pytest.Config) -> None:
    """A suite started in the background by a non-interactive shell (``make test &``, a CI
    step's ``( ... ) &``) inherits SIGINT ignored, and so would every command the tests start:
    Python then installs no Ctrl-C handler in them, and the tests that interrupt a run with
    SIGINT saw it ignored. A handler here (reset to the default at exec) gives the commands
    the tests start the disposition a terminal gives a user's."""
    del config
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def tiny_depth_anything(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny randomly initialised Depth-Anything saved like a real checkpoint, so the tests
    exercise the real loading path (a local directory, HF_HUB_OFFLINE=1)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    backbone = transformers.Dinov2Config(
        hidden_size=32,
        num_hidden_layers=4,
        num_attention_heads=2,
        intermediate_size=64,
        patch_size=14,
        image_size=56,
        out_indices=[1, 2, 3, 4],
        reshape_hidden_states=False,
    )
    config = transformers.DepthAnythingConfig(
        backbone_config=backbone,
        reassemble_hidden_size=32,
        neck_hidden_sizes=[8, 16, 32, 32],
        fusion_hidden_size=16,
        head_hidden_size=8,
    )
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("depth-anything-tiny")
    transformers.DepthAnythingForDepthEstimation(config).save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_qalign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny randomly initialised vision-language model (LLaVA: CLIP vision tower + Llama)
    with a word-level tokenizer that knows the Q-Align prompt and the five rating words,
    saved with save_pretrained like a real checkpoint, so the Q-Align backend runs its real
    loading and scoring path on it (a local directory, HF_HUB_OFFLINE=1)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    words = [
        "<unk>", "<s>", "</s>", "<pad>", "<image>", "USER", ":", "ASSISTANT", "How", "would",
        "you", "rate", "the", "The", "quality", "aesthetics", "of", "this", "video", "is", "?",
        "excellent", "good", "fair", "poor", "bad",
    ]  # fmt: skip
    vocab = {w: i for i, w in enumerate(words)}
    word_level = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    word_level.pre_tokenizer = tokenizers.pre_tokenizers.Sequence(
        [
            tokenizers.pre_tokenizers.Split("<image>", behavior="isolated"),
            tokenizers.pre_tokenizers.Whitespace(),
        ]
    )
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=word_level,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        extra_special_tokens={"image_token": "<image>"},
    )
    image_processor = transformers.CLIPImageProcessor(
        size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28}
    )
    vision = transformers.CLIPVisionConfig(
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=28,
        patch_size=14,
        projection_dim=16,
    )
    text = transformers.LlamaConfig(
        vocab_size=len(words),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=512,
    )
    config = transformers.LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=vocab["<image>"],
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    torch.manual_seed(0)
    model = transformers.LlavaForConditionalGeneration(config)
    processor = transformers.LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=14,
        vision_feature_select_strategy="default",
        image_token="<image>",
        num_additional_image_tokens=1,
    )
    path = tmp_path_factory.mktemp("qalign-tiny")
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return path


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    """torch on one intra-op thread for the test: its second thread spins against the other
    jobs of a 2-core machine (a tiny model's forward pass cost 15× the CPU on two threads);
    results do not depend on it. Skips without torch."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
