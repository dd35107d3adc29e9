"""What a training launch would train on, before it is launched: the launch form's preview.

``training_preview`` tokenizes a sample of the selected dialogues with the base model's
tokenizer under the launch's configuration, scales the sample's token counts to the whole
selection, and renders the sample's first dialogue as each method trains on it (trained tokens
marked), or says why the chat template cannot express a method. The web process never loads a
tokenizer: a worker calls this and stores the ``PreviewResult`` it returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import cast

from models_gpu.spec.reports import PreviewExample, PreviewResult, PreviewSegment
from models_gpu.spec.training import METHODS, MethodId, TrainingConfig, TrainingDialogue
from models_gpu.training.encode import ChatTemplateError, encode_for_config, render_preview


def training_preview(
    base_model: str,
    sample: Sequence[TrainingDialogue],
    *,
    selected: int,
    config: TrainingConfig,
) -> PreviewResult:
    """The preview of training ``base_model`` under ``config`` on a selection of ``selected``
    dialogues, from ``sample`` (the first of them; at least one).

    Raises OSError or ValueError when no tokenizer loads from ``base_model`` (which one depends
    on what is missing), and ValueError (``ChatTemplateError`` is one) when the configuration's
    own method cannot encode the sample; a method the chat template cannot express is reported
    in its example instead.
    """
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base_model)
    encoded = [encode_for_config(tokenizer, dialogue, config) for dialogue in sample]
    examples = []
    for method in METHODS:
        as_method = replace(config, method=cast(MethodId, method))
        try:
            example = encode_for_config(tokenizer, sample[0], as_method)
            segments = tuple(
                PreviewSegment(text, trained)
                for text, trained in render_preview(tokenizer, example)
            )
            examples.append(PreviewExample(method, segments))
        except ChatTemplateError as error:
            examples.append(PreviewExample(method, error=str(error)))
    scale = selected / len(sample)
    return PreviewResult(
        dialogues=selected,
        sampled=len(sample),
        tokens=round(scale * sum(len(e.input_ids) for e in encoded)),
        trained_tokens=round(scale * sum(e.trained_tokens for e in encoded)),
        truncated=sum(e.truncated for e in encoded),
        nothing_to_train=sum(not e.trained_tokens for e in encoded),
        longest=max(len(e.input_ids) for e in encoded),
        example_dialogue=sample[0].dialogue_id,
        examples=tuple(examples),
    )
