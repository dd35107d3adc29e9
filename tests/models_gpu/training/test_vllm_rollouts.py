"""Online SML's vLLM engine (models_gpu/training/vllm_rollouts.py): after a sync it samples with
the policy's probabilities, and a stale copy is caught.

vLLM's CPU build, in this process (the external launcher, as in training), on the tiny untrained
house model in float32. The measure is ``check_sync``: the largest gap between the
log-probability vLLM reports for a token it sampled and the policy's own for that token."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("vllm")

from models_gpu.training.vllm_rollouts import ColocatedVllm, check_sync  # noqa: E402
from models_gpu.types import DialogueResult, GenerationRequest, Message  # noqa: E402
from tests.models_gpu.engine_doubles import arithmetic_job  # noqa: E402

# Float32 on both sides: observed gaps are below 1e-4; a step's worth of change moves them by
# tenths (the stale check below).
TOLERANCE = 1e-3
REQUESTS = [
    GenerationRequest((Message("user", "What is 12 + 30?"),), seed=1),
    GenerationRequest(
        (
            Message("user", "What is 7 * 8?"),
            Message("assistant", "The answer is 54."),
            Message("user", "Not quite: 54 is too low. Try again."),
        ),
        seed=2,
    ),
]


def moved(model: object, seed: int) -> None:
    """Every trained weight moved a little, as an optimizer step would."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():  # type: ignore[attr-defined]
            if parameter.requires_grad:
                parameter.add_(0.05 * torch.randn(parameter.shape, generator=generator))


@pytest.mark.slow
def test_after_a_sync_vllm_samples_with_the_policys_probabilities(tiny_model_dir: Path) -> None:
    from peft import LoraConfig, get_peft_model

    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    params = {"dtype": "float32", "max_model_len": 512, "temperature": 1.0, "max_new_tokens": 8}
    engine = ColocatedVllm(model, str(tiny_model_dir), params)
    try:
        assert check_sync(engine, model, tokenizer, REQUESTS) < TOLERANCE  # the same checkpoint

        moved(model, seed=0)  # full fine-tuning, tied embeddings included
        stale = check_sync(engine, model, tokenizer, REQUESTS)
        assert stale > 10 * TOLERANCE, "a stale copy must fail the check"
        engine.sync_weights()
        assert check_sync(engine, model, tokenizer, REQUESTS) < TOLERANCE

        # A LoRA policy: its adapters are merged into the copy, under the checkpoint's names.
        lora = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
        moved(lora, seed=1)  # the adapters only: the base weights are frozen
        assert check_sync(engine, lora, tokenizer, REQUESTS) > 10 * TOLERANCE
        engine.model = lora  # as the trainer wraps its model
        engine.sync_weights()
        assert check_sync(engine, lora, tokenizer, REQUESTS) < TOLERANCE
        assert engine.syncs == 2
    finally:
        engine.close()


@pytest.mark.slow
def test_online_sml_plays_on_vllm_with_each_steps_weights(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two steps of online SML with vLLM rollouts: TRL syncs the engine before each step's
    rollouts, and right after each sync vLLM samples with the policy's probabilities (the step
    before had changed them); the rollouts carry vLLM's log-probabilities for the correction."""
    from models_gpu.backends import load_generator
    from models_gpu.spec.online import OnlineConfig
    from models_gpu.spec.protocol import ProtocolSpec
    from models_gpu.spec.reports import StepReport
    from models_gpu.spec.run import RoleSpec
    from models_gpu.spec.training import TrainingConfig
    from models_gpu.training.online import train_online

    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)
    gaps: list[float] = []
    sync = ColocatedVllm.sync_weights

    def checked_sync(engine: ColocatedVllm) -> None:
        sync(engine)
        gaps.append(check_sync(engine, engine.model, tokenizer, REQUESTS))

    monkeypatch.setattr(ColocatedVllm, "sync_weights", checked_sync)
    training = TrainingConfig(
        learning_rate=1e-2, max_steps=2, seed=3, device="cpu", precision="float32",
        gradient_checkpointing=False, logging_steps=1, save_steps=2, max_length=256,
    )  # fmt: skip
    online = OnlineConfig(
        group_size=2, tasks_per_step=2, horizon=2, max_new_tokens=6, store_share=1.0,
        rollout_backend="vllm",
    )  # fmt: skip
    logs: list[object] = []
    stored: list[DialogueResult] = []
    result = train_online(
        training,
        online,
        base_model=tiny_model_dir,
        tasks=[arithmetic_job(i + 1, i % 5, (i * 3) % 5, seed=i).task for i in range(4)],
        protocol=ProtocolSpec(mode="didactic", max_turns=3),
        teacher=load_generator(RoleSpec("scripted", "feedback-teacher")),
        output_dir=tmp_path / "run",
        on_log=logs.append,
        on_rollouts=lambda step, results: stored.extend(results),
    )
    assert result.global_step == 2
    assert [entry.step for entry in logs if isinstance(entry, StepReport)] == [1, 2]
    assert len(gaps) == 2 and max(gaps) < TOLERANCE, gaps
    students = [turn for r in stored for turn in r.turns if turn.role == "student"]
    assert students and all(
        len(turn.token_logprobs) == len(turn.token_ids) > 0 for turn in students
    )
