"""The training and generation paths on a CUDA device, in the precision a GPU host gets by default.

Every test here runs the same code as its CPU sibling (tests/models_gpu/training, house,
backends), only with ``device="cuda"`` and ``precision="auto"`` (bfloat16 autocast where the card
has it), so that what the CPU suite proves about the plumbing also holds where users train. They
are skipped on machines without CUDA (the ``gpu`` mark); run them on a GPU host with
``pytest -m gpu tests/models_gpu``. They sit with the training tests for
their fixtures (the tiny model and its tokenizer).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]

from models_gpu.backends import load_generator  # noqa: E402
from models_gpu.engine import run_dialogues  # noqa: E402
from models_gpu.spec.protocol import ProtocolSpec  # noqa: E402
from models_gpu.spec.reports import Report, StepReport  # noqa: E402
from models_gpu.spec.run import RoleSpec  # noqa: E402
from models_gpu.spec.training import TrainingConfig  # noqa: E402
from tests.models_gpu.engine_doubles import arithmetic_job  # noqa: E402
from tests.models_gpu.training.dialogues import sums, trained_token_loss  # noqa: E402

DIDACTIC = ProtocolSpec(mode="didactic", max_turns=3)
ON_CUDA = TrainingConfig(
    learning_rate=1e-3, max_steps=20, batch_size=4, lr_scheduler="constant",
    device="cuda", precision="auto", logging_steps=1, save_steps=1000,
)  # fmt: skip


@pytest.mark.parametrize("finetuning", ["full", "lora"])
def test_fine_tuning_on_cuda_learns_and_saves_a_checkpoint_that_loads_on_cpu(
    finetuning: str, tiny_model_dir: Path, tiny_tokenizer: Any, tmp_path: Path
) -> None:
    from models_gpu.training.trainer import train

    config = ON_CUDA
    if finetuning == "lora":
        config = replace(ON_CUDA, finetuning="lora", lora_r=8, lora_alpha=16, learning_rate=1e-2)
    logs: list[Report] = []
    result = train(
        config, base_model=tiny_model_dir, examples=sums(16), output_dir=tmp_path,
        on_log=logs.append,
    )  # fmt: skip
    assert result.final_dir is not None and result.global_step == 20
    losses = [entry.loss for entry in logs if isinstance(entry, StepReport)]
    assert losses and all(loss is not None and loss == loss for loss in losses)  # no NaN
    before = trained_token_loss(tiny_model_dir, tiny_tokenizer, config)
    after = trained_token_loss(result.final_dir, tiny_tokenizer, config)
    assert after < 0.8 * before, (before, after)


def test_online_sml_plays_and_updates_on_cuda(tiny_model_dir: Path, tmp_path: Path) -> None:
    from models_gpu.spec.online import OnlineConfig
    from models_gpu.training.online import train_online

    training = replace(ON_CUDA, max_steps=2, save_steps=1, max_length=256)
    online = OnlineConfig(group_size=2, tasks_per_step=2, horizon=2, max_new_tokens=6)
    tasks = [arithmetic_job(i + 1, i % 5, (i * 3) % 5, seed=i).task for i in range(4)]
    logs: list[Report] = []
    result = train_online(
        training, online, base_model=tiny_model_dir, tasks=tasks, protocol=DIDACTIC,
        teacher=load_generator(RoleSpec("scripted", "feedback-teacher")),
        output_dir=tmp_path / "run", on_log=logs.append,
    )  # fmt: skip
    assert result.final_dir and result.global_step == 2 and not result.stopped
    steps = [entry for entry in logs if isinstance(entry, StepReport)]
    assert [entry.step for entry in steps] == [1, 2]
    assert all(entry.rollouts and entry.rollouts.student_tokens > 0 for entry in steps)
    assert all(entry.loss is not None and entry.loss == entry.loss for entry in steps)


def test_a_dialogue_batch_plays_on_cuda_as_it_does_on_cpu(tiny_model_dir: Path) -> None:
    """Greedy, in float32: the same replies on both devices (a tiny model has no near-ties
    that rounding could flip at this length)."""
    jobs = [arithmetic_job(i + 1, i % 5, (i * 3) % 5, seed=i) for i in range(6)]
    teacher = load_generator(RoleSpec("scripted", "feedback-teacher"))

    def replies(device: str) -> list[list[str]]:
        student = load_generator(
            RoleSpec("transformers", str(tiny_model_dir),
                     {"device": device, "dtype": "float32", "temperature": 0.0,
                      "max_new_tokens": 6})
        )  # fmt: skip
        results: list[Any] = []
        run_dialogues(jobs, DIDACTIC, student=student, teacher=teacher, on_finished=results.extend)
        ordered = sorted(results, key=lambda result: result.task_id)
        return [[turn.text for turn in result.turns] for result in ordered]

    assert replies("cuda") == replies("cpu")


def test_the_house_model_builds_on_cuda(tmp_path: Path) -> None:
    from models_gpu.house import build_house_model
    from models_gpu.house.build import HOUSE_TRAINING
    from models_gpu.house.model import METADATA_FILE, HouseConfig

    tiny = HouseConfig(hidden_size=64, num_layers=1, num_heads=1, intermediate_size=128,
                       vocab_size=512)  # fmt: skip
    training = replace(HOUSE_TRAINING, batch_size=16, learning_rate=3e-3, warmup_steps=5,
                       device="cuda")  # fmt: skip
    out = build_house_model(
        tmp_path / "house", steps=60, model_config=tiny, train_config=training, evaluate_tasks=0
    )
    notes = json.loads((out / METADATA_FILE).read_text())
    assert notes["loss_last"] < 0.8 * notes["loss_first"]
    assert transformers.AutoModelForCausalLM.from_pretrained(out).device.type == "cpu"
