"""Fine-tuning the tiny house model with TRL: it learns the trained tokens, LoRA merges into a
plain checkpoint, and a run stopped at step k resumes to the same end as an uninterrupted run.

The model is the tiny untrained house model (tests/model_fixtures.py) and the runs take a few
dozen steps on CPU in float32, so they say whether the plumbing is right, not how well a real
model learns.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from itertools import chain
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
trl = pytest.importorskip("trl")
pytest.importorskip("peft")

from models_gpu.spec.reports import Report, StepReport, TrainResult  # noqa: E402
from models_gpu.spec.training import TrainingConfig, TrainingConfigError  # noqa: E402
from models_gpu.training.encode import encode_for_config  # noqa: E402
from models_gpu.training.trainer import (  # noqa: E402
    DATASET_DIR,
    FINAL_DIR,
    JOB_FILE,
    METADATA_FILE,
    load_encoded_dataset,
    train,
)
from tests.models_gpu.training.dialogues import sums, trained_token_loss  # noqa: E402

# CPU, float32, no gradient checkpointing: deterministic and quick.
QUICK = TrainingConfig(
    learning_rate=1e-3,
    max_steps=20,
    batch_size=4,
    lr_scheduler="constant",
    gradient_checkpointing=False,
    precision="float32",
    device="cpu",
    logging_steps=1,
    save_steps=1000,
)


def weights(model_dir: Path | str) -> dict[str, Any]:
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    return {name: tensor.clone() for name, tensor in model.state_dict().items()}


@pytest.mark.slow
def test_full_fine_tuning_learns_the_trained_tokens(
    tiny_model_dir: Path, tiny_tokenizer: Any, tmp_path: Path
) -> None:
    logs: list[Report] = []
    result = train(
        QUICK, base_model=tiny_model_dir, examples=lambda: sums(16), output_dir=tmp_path,
        on_log=logs.append,
    )  # fmt: skip
    assert result.final_dir == str(tmp_path / FINAL_DIR) and not result.stopped
    assert (result.global_step, result.total_steps, result.resumed_from) == (20, 20, None)
    assert result.dataset is not None
    assert result.dataset.examples == 16 and result.dataset.skipped == 0
    assert result.dataset.trained_tokens == sum(
        encode_for_config(tiny_tokenizer, d, QUICK).trained_tokens for d in sums(16)
    )
    assert all(isinstance(entry, StepReport) for entry in logs)
    steps = [entry for entry in logs if isinstance(entry, StepReport)]
    assert [entry.step for entry in steps] == list(range(1, 21))
    first = steps[0]
    assert first.total_steps == 20 and first.tokens_per_second and first.tokens_per_second > 0
    assert first.learning_rate is not None and first.grad_norm is not None
    assert set(first.curves()) == {"loss", "learning_rate", "grad_norm", "tokens_per_second"}
    assert [loss for _, loss in result.loss_history] == [entry.loss for entry in steps]
    assert TrainResult.from_json(result.to_json()) == result

    before = trained_token_loss(tiny_model_dir, tiny_tokenizer, QUICK)
    after = trained_token_loss(result.final_dir, tiny_tokenizer, QUICK)
    assert after < 0.6 * before, (before, after)
    final = Path(result.final_dir)
    metadata = json.loads((final / METADATA_FILE).read_text())
    assert metadata["config_hash"] == QUICK.config_hash() and metadata["global_step"] == 20
    tokenizer = transformers.AutoTokenizer.from_pretrained(final)
    assert tokenizer.chat_template == tiny_tokenizer.chat_template
    # What stays on disk: the examples, written once as they streamed in, and the final model;
    # no checkpoint (a finished run is never resumed).
    assert not list(tmp_path.glob("checkpoint-*"))
    rows = load_encoded_dataset(tmp_path / DATASET_DIR)
    assert [path.name for path in (tmp_path / DATASET_DIR).glob("*.arrow")] == ["data-00000.arrow"]
    assert rows["input_ids"] == [
        encode_for_config(tiny_tokenizer, d, QUICK).input_ids for d in sums(16)
    ]
    # Run again on a finished directory: nothing is read or trained, the result is as stored.
    again = train(QUICK, base_model=tiny_model_dir, examples=not_read, output_dir=tmp_path)
    assert replace(again, wall_seconds=0) == replace(result, wall_seconds=0)


def not_read() -> list[Any]:
    raise AssertionError("the dialogues are read once, into the dataset on disk")


@pytest.mark.slow
def test_lora_is_merged_into_a_plain_checkpoint(
    tiny_model_dir: Path, tiny_tokenizer: Any, tmp_path: Path
) -> None:
    config = replace(QUICK, finetuning="lora", lora_r=8, lora_alpha=16, learning_rate=1e-2)
    result = train(config, base_model=tiny_model_dir, examples=sums(16), output_dir=tmp_path)
    assert result.final_dir is not None
    model = transformers.AutoModelForCausalLM.from_pretrained(result.final_dir)
    assert type(model).__name__ == "LlamaForCausalLM"
    merged, base = weights(result.final_dir), weights(tiny_model_dir)
    assert merged.keys() == base.keys() and not any("lora" in name for name in merged)
    changed = [name for name in base if not torch.equal(base[name], merged[name])]
    assert any(name.endswith("q_proj.weight") for name in changed)
    assert not any("norm" in name for name in changed)  # only the adapted matrices moved
    before = trained_token_loss(tiny_model_dir, tiny_tokenizer, config)
    after = trained_token_loss(result.final_dir, tiny_tokenizer, config)
    assert after < before, (before, after)


@pytest.fixture
def trained_batches(monkeypatch: pytest.MonkeyPatch) -> list[list[tuple[int, ...]]]:
    """Records the rows (token ids, padding removed) of every batch the trainer trains on."""
    batches: list[list[tuple[int, ...]]] = []
    original = trl.SFTTrainer.training_step

    def recording(self: Any, model: Any, inputs: dict[str, Any], *args: Any) -> Any:
        rows = []
        for ids, mask in zip(inputs["input_ids"], inputs["attention_mask"], strict=True):
            rows.append(tuple(int(token) for token, keep in zip(ids, mask, strict=True) if keep))
        batches.append(rows)
        return original(self, model, inputs, *args)

    monkeypatch.setattr(trl.SFTTrainer, "training_step", recording)
    return batches


@pytest.mark.slow
def test_a_stopped_run_resumes_where_it_stopped(
    tiny_model_dir: Path, tiny_tokenizer: Any, tmp_path: Path, trained_batches: list[Any]
) -> None:
    # 6 dialogues in batches of 2: 3 steps an epoch, so the stop (after step 4) and the resume
    # fall inside the second epoch, and the run ends inside the third.
    config = replace(QUICK, max_steps=8, batch_size=2, save_steps=3, lr_scheduler="linear")
    examples = sums(6)
    ids = {tuple(encode_for_config(tiny_tokenizer, d, config).input_ids): d.dialogue_id
           for d in examples}  # fmt: skip

    def order() -> list[list[int]]:
        seen = [sorted(ids[row] for row in batch) for batch in trained_batches]
        trained_batches.clear()
        return seen

    straight = train(
        config, base_model=tiny_model_dir, examples=examples, output_dir=tmp_path / "a"
    )
    straight_order = order()
    assert len(straight_order) == 8
    # Every dialogue once per epoch: no repeats, nothing skipped.
    for epoch in (straight_order[:3], straight_order[3:6]):
        assert sorted(chain.from_iterable(epoch)) == list(range(6))

    asked = []

    def stop_after_step_4() -> bool:
        asked.append(True)
        return len(asked) >= 4

    out = tmp_path / "b"
    stopped = train(
        config, base_model=tiny_model_dir, examples=examples, output_dir=out,
        should_stop=stop_after_step_4,
    )  # fmt: skip
    assert stopped.stopped and stopped.final_dir is None and stopped.global_step == 4
    assert len(asked) == 4  # asked after every step
    assert sorted(path.name for path in out.glob("checkpoint-*")) == [
        "checkpoint-3", "checkpoint-4"
    ]  # fmt: skip
    assert not (out / FINAL_DIR).exists()
    first_part = order()

    # A save cut short by a killed worker (transformers writes trainer_state.json last) is
    # passed over: the resume starts from the newest complete checkpoint.
    cut_short = out / "checkpoint-6"
    cut_short.mkdir()
    for weights_file in (out / "checkpoint-4").glob("*.safetensors"):
        shutil.copy(weights_file, cut_short)
    resumed = train(config, base_model=tiny_model_dir, examples=not_read, output_dir=out)
    assert resumed.resumed_from == str(out / "checkpoint-4") and not resumed.stopped
    assert resumed.global_step == straight.global_step == 8
    assert first_part + order() == straight_order
    assert [step for step, _ in resumed.loss_history] == list(range(1, 9))
    for (_, a), (_, b) in zip(resumed.loss_history, straight.loss_history, strict=True):
        assert a == pytest.approx(b, rel=1e-4)
    straight_weights = weights(straight.final_dir or "")
    resumed_weights = weights(resumed.final_dir or "")
    for name, tensor in straight_weights.items():
        torch.testing.assert_close(resumed_weights[name], tensor, rtol=1e-4, atol=1e-5)


def test_an_output_directory_serves_one_configuration(tiny_model_dir: Path, tmp_path: Path) -> None:
    (tmp_path / JOB_FILE).write_text(json.dumps({"config_hash": "another", "base_model": "x"}))
    with pytest.raises(ValueError, match="holds a training run of another configuration"):
        train(QUICK, base_model=tiny_model_dir, examples=[], output_dir=tmp_path)
    with pytest.raises(TrainingConfigError, match="batch_size"):
        train(replace(QUICK, batch_size=0), base_model=tiny_model_dir, examples=[],
              output_dir=tmp_path / "new")  # fmt: skip


def test_dialogues_with_nothing_to_train_are_refused(tiny_model_dir: Path, tmp_path: Path) -> None:
    config = replace(QUICK, max_length=16)  # cut inside every task prompt
    with pytest.raises(ValueError, match=r"none of the 3 dialogue\(s\) has a token to train"):
        train(config, base_model=tiny_model_dir, examples=sums(3), output_dir=tmp_path)
