"""The launch form's preview, computed without the web side: token counts scaled from a sample
to the selection, and the sample's first dialogue as each method trains on it."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers")

from models_gpu.spec.training import METHODS, TrainingConfig
from models_gpu.training.preview import training_preview
from tests.models_gpu.training.dialogues import sums


def test_counts_scale_from_the_sample_and_each_method_shows_its_trained_text(
    tiny_model_dir: Path,
) -> None:
    sample = sums(4, start=1)
    whole = training_preview(str(tiny_model_dir), sample, selected=4, config=TrainingConfig())
    scaled = training_preview(str(tiny_model_dir), sample, selected=8, config=TrainingConfig())
    assert (whole.dialogues, whole.sampled, whole.example_dialogue) == (4, 4, 1)
    assert whole.trained_tokens > 0 and whole.tokens > whole.trained_tokens
    assert (scaled.tokens, scaled.trained_tokens) == (2 * whole.tokens, 2 * whole.trained_tokens)
    assert [example.method for example in whole.examples] == list(METHODS)
    sft = next(example for example in whole.examples if example.method == "sft")
    trained = "".join(segment.text for segment in sft.segments if segment.trained)
    assert "The answer is 21." in trained and "Too high." not in trained


def test_a_base_model_without_a_tokenizer_raises(tmp_path: Path) -> None:
    with pytest.raises((OSError, ValueError)):
        training_preview(str(tmp_path), sums(1), selected=1, config=TrainingConfig())
