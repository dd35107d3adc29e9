"""Online SML: rollouts laid out on the sampled ids, rewards, and TRL's GRPO hook on a tiny model.

The contract test (``test_grpo_trains_on_the_engine_rollouts``) is what fails first if a TRL
upgrade changes ``rollout_func``: it runs two real GRPO steps through the engine in seconds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from models_gpu.backends import load_generator
from models_gpu.conversation import student_view
from models_gpu.spec.online import (
    OnlineConfig,
    dialogue_reward,
    online_config_problems,
    single_turn_baseline,
)
from models_gpu.spec.protocol import ProtocolSpec
from models_gpu.spec.reports import HeldOutReport, Report, StepReport
from models_gpu.spec.run import RoleSpec
from models_gpu.spec.training import TrainingConfig
from models_gpu.training.rollouts import rollout_tokens, rollouts_tokens
from models_gpu.types import TaskSpec, TurnRecord
from tests.models_gpu.engine_doubles import arithmetic_job

pytest.importorskip("trl")

DIDACTIC = ProtocolSpec(mode="didactic", max_turns=3)


def test_reward_is_discounted_by_the_turn_that_solved_it() -> None:
    assert dialogue_reward(1, 0.7) == 1.0
    assert dialogue_reward(3, 0.7) == pytest.approx(0.49)
    assert dialogue_reward(None, 0.7) == 0.0


def test_single_turn_baseline_matches_the_generation_budget() -> None:
    baseline = single_turn_baseline(OnlineConfig(group_size=8, horizon=4))
    assert (baseline.horizon, baseline.group_size) == (1, 32)


def test_online_configuration_problems_name_their_field() -> None:
    problems = online_config_problems({"group_size": 1, "gamma": 0, "typo": 3})
    assert {p.field for p in problems} == {"group_size", "gamma", "typo"}
    config = OnlineConfig(gamma=1)
    assert OnlineConfig.from_json(json.loads(json.dumps(config.to_json()))) == config
    with pytest.raises(ValueError, match="missing"):
        OnlineConfig.from_json({"schema": 1})
    # Written before rollout_backend existed: it read as the transformers rollouts it ran.
    old = {key: value for key, value in config.to_json().items() if key != "rollout_backend"}
    assert OnlineConfig.from_json({**old, "schema": 1}) == config
    assert config.rollout_backend == "transformers"
    assert {p.field for p in online_config_problems({"rollout_backend": "tgi"})} == {
        "rollout_backend"
    }


def test_a_run_started_before_schema_2_keeps_its_identity() -> None:
    # What schema 1 wrote into training_job.json for the default configuration (commit
    # cd6ac12): a transformers run resumed after the upgrade must hash the same, or its output
    # directory reads as claimed by another training.
    schema_1 = {
        "schema": 1, "group_size": 8, "tasks_per_step": 4, "horizon": 4, "gamma": 0.7,
        "beta": 0.0, "clip_epsilon": 0.2, "temperature": 1.0, "max_new_tokens": 64,
        "store_share": 0.25, "eval_every": 0,
    }  # fmt: skip
    assert OnlineConfig().run_identity() == schema_1
    on_vllm = OnlineConfig(rollout_backend="vllm").run_identity()
    assert on_vllm["schema"] == 2 and on_vllm["rollout_backend"] == "vllm"


def _turn(index: int, role: str, text: str, ids: tuple[int, ...] = ()) -> TurnRecord:
    kind = "attempt" if role == "student" else "feedback"
    return TurnRecord(index, index // 2 + 1, role, kind, text, token_ids=ids)  # type: ignore[arg-type]


def test_rollout_trains_exactly_the_sampled_ids(tiny_tokenizer: Any) -> None:
    tokenizer = tiny_tokenizer
    end = tokenizer.convert_tokens_to_ids("<|end|>")
    # Sampled ids that are NOT what tokenizing the text would give: the layout must keep them.
    first = (*tokenizer.encode("The answer is 5.", add_special_tokens=False)[::-1], end)
    second = tuple(tokenizer.encode("The answer is 7", add_special_tokens=False))  # cut: no end
    turns = [
        _turn(0, "student", "The answer is 5.", first),
        _turn(1, "teacher", "Too low."),
        _turn(2, "student", "The answer is 7", second),
    ]
    view = student_view(
        system="Be brief.", task_prompt="What is 3 + 4?", sharded=False, turns=turns
    )
    laid_out = rollout_tokens(tokenizer, view, turns, max_length=10_000)

    spans, current = [], []
    for token, trained in zip(laid_out.completion_ids, laid_out.env_mask, strict=True):
        if trained:
            current.append(token)
        elif current:
            spans.append(tuple(current))
            current = []
    if current:
        spans.append(tuple(current))
    assert spans == [first, second]
    assert laid_out.completion_ids[: len(first)] == list(first), "the completion starts sampled"
    context = tokenizer.decode(laid_out.completion_ids[len(first) : -len(second)])
    assert context == "\n<|user|>\nToo low.<|end|>\n<|assistant|>\n"
    prompt = tokenizer.decode(laid_out.prompt_ids)
    assert prompt == (
        "<|bos|><|system|>\nBe brief.<|end|>\n<|user|>\nWhat is 3 + 4?<|end|>\n<|assistant|>\n"
    ), "the prompt opens the student's first reply"
    short = rollout_tokens(tokenizer, view, turns, max_length=len(laid_out.prompt_ids) + 3)
    assert short.truncated and len(short.completion_ids) == 3


def test_rollout_closes_a_reply_that_was_cut(tiny_tokenizer: Any) -> None:
    tokenizer = tiny_tokenizer
    end = tokenizer.convert_tokens_to_ids("<|end|>")
    cut = tuple(tokenizer.encode("I think", add_special_tokens=False))
    nine = (*tokenizer.encode("9", add_special_tokens=False), end)
    turns = [
        _turn(0, "student", "I think", cut),
        _turn(1, "teacher", "Go on."),
        _turn(2, "student", "9", nine),
    ]
    view = student_view(system="", task_prompt="Q?", sharded=False, turns=turns)
    laid_out = rollout_tokens(tokenizer, view, turns, max_length=10_000)
    after_cut = laid_out.completion_ids[len(cut)]
    assert after_cut == end and laid_out.env_mask[len(cut)] == 0


def test_replies_after_a_dropped_special_token_are_context_not_trained(
    tiny_tokenizer: Any,
) -> None:
    # "The answer is <|bos|>9.": the text, and so every later prompt, lacks the <|bos|> the
    # student sampled; the replies after it were played on a context the layout cannot show.
    tokenizer = tiny_tokenizer
    end = tokenizer.convert_tokens_to_ids("<|end|>")

    def ids(text: str) -> tuple[int, ...]:
        return (*tokenizer.encode(text, add_special_tokens=False), end)

    answer, nine = ids("The answer is"), ids("9.")
    with_bos = (*answer[:-1], tokenizer.bos_token_id, *nine)
    turns = [
        _turn(0, "student", "I think 8.", ids("I think 8.")),
        _turn(1, "teacher", "Too low."),
        _turn(2, "student", "The answer is9.", with_bos),
        _turn(3, "teacher", "Too low."),
        _turn(4, "student", "10", ids("10")),
        _turn(5, "teacher", "Too low."),
        _turn(6, "student", "11", ids("11")),
    ]
    view = student_view(system="", task_prompt="Q?", sharded=False, turns=turns)
    laid_out = rollout_tokens(tokenizer, view, turns, max_length=10_000)
    assert laid_out.trained_tokens == len(ids("I think 8.")) + len(with_bos)
    assert laid_out.completion_ids[-len(ids("11")) :] == list(ids("11")), "kept as context"

    clean = [
        *turns[:2],
        _turn(2, "student", "The answer is 9.", ids("The answer is 9.")),
        *turns[3:],
    ]
    view = student_view(system="", task_prompt="Q?", sharded=False, turns=clean)
    every_reply = sum(len(turn.token_ids) for turn in clean)
    assert rollout_tokens(tokenizer, view, clean, max_length=10_000).trained_tokens == every_reply


def test_a_step_laid_out_together_equals_each_dialogue_alone(tiny_tokenizer: Any) -> None:
    # rollouts_tokens tokenizes every dialogue's renderings in one batched call: the batch must
    # not mix dialogues up or shift a rendering onto the next one.
    tokenizer = tiny_tokenizer
    end = tokenizer.convert_tokens_to_ids("<|end|>")

    def ids(text: str) -> tuple[int, ...]:
        return (*tokenizer.encode(text, add_special_tokens=False), end)

    dialogues, sampled = [], []
    for replies in (["5"], ["I think 3", "4"], ["7", "8", "The answer is 9."]):
        sampled.append(sum(len(ids(reply)) for reply in replies))
        turns = []
        for reply in replies:
            turns.append(_turn(len(turns), "student", reply, ids(reply)))
            turns.append(_turn(len(turns), "teacher", f"Not {reply}."))
        turns.pop()  # the dialogue ends on the student's last reply
        view = student_view(system="Be brief.", task_prompt="Q?", sharded=False, turns=turns)
        dialogues.append((view, turns))
    together = rollouts_tokens(tokenizer, dialogues, max_length=10_000)
    alone = [rollout_tokens(tokenizer, v, t, max_length=10_000) for v, t in dialogues]
    assert together == alone
    assert [laid_out.trained_tokens for laid_out in together] == sampled


def test_rollout_refuses_turns_without_sampled_ids(tiny_tokenizer: Any) -> None:
    turns = [_turn(0, "student", "5")]
    view = student_view(system="", task_prompt="Q?", sharded=False, turns=turns)
    with pytest.raises(ValueError, match="sampled token ids"):
        rollout_tokens(tiny_tokenizer, view, turns, max_length=100)


def _tasks(count: int) -> list[TaskSpec]:
    return [arithmetic_job(i + 1, i % 5, (i * 3) % 5, seed=i).task for i in range(count)]


def test_play_gives_every_task_and_sample_its_own_result() -> None:
    """Held-out jobs number samples per task (0..n-1), so different tasks share sample indices.
    ``play`` keyed its results by sample index alone: 32 tasks x 8 samples came back as 8
    dialogues, each 32 times, and the held-out curve read 12.5% at turn 6 exactly (one per
    task) while the evaluation of the same model gave 23.8%."""
    from dataclasses import replace

    from models_gpu.training.online import play
    from tests.models_gpu.engine_doubles import Replying

    def right_on_task_1(request: Any) -> str:
        prompt = request.messages[-1].content
        return "The answer is 3." if "1 + 2" in prompt else "The answer is 0."

    jobs = [
        replace(arithmetic_job(task, left, 2, seed=task), sample_index=sample)
        for task, left in ((1, 1), (2, 5))
        for sample in range(2)
    ]
    teacher = load_generator(RoleSpec("scripted", "feedback-teacher"))
    results = play(Replying(right_on_task_1), jobs, DIDACTIC, teacher)
    assert [(r.task_id, r.sample_index, r.solved) for r in results] == [
        (1, 0, True), (1, 1, True), (2, 0, False), (2, 1, False),
    ]  # fmt: skip
    with pytest.raises(ValueError, match="different"):
        play(Replying(right_on_task_1), [jobs[0], jobs[0]], DIDACTIC, teacher)


def test_grpo_trains_on_the_engine_rollouts(tiny_model_dir: Path, tmp_path: Path) -> None:
    from models_gpu.training.online import train_online

    training = TrainingConfig(
        learning_rate=1e-3, max_steps=2, seed=3, device="cpu", precision="float32",
        gradient_checkpointing=False, logging_steps=1, save_steps=1, max_length=256,
    )  # fmt: skip
    online = OnlineConfig(
        group_size=2, tasks_per_step=2, horizon=2, max_new_tokens=6, store_share=0.5, eval_every=1
    )
    logs: list[Report] = []
    stored: list[tuple[int, int]] = []
    heldout = [arithmetic_job(100 + i, i, 1, seed=i) for i in range(3)]
    result = train_online(
        training,
        online,
        base_model=tiny_model_dir,
        tasks=_tasks(4),
        protocol=DIDACTIC,
        teacher=load_generator(RoleSpec("scripted", "feedback-teacher")),
        output_dir=tmp_path / "run",
        heldout=heldout,
        on_log=logs.append,
        on_rollouts=lambda step, results: stored.append((step, len(results))),
    )
    assert result.final_dir and (Path(result.final_dir) / "config.json").is_file()
    assert result.global_step == 2 and not result.stopped
    steps = [entry for entry in logs if isinstance(entry, StepReport)]
    assert [entry.step for entry in steps] == [1, 2]
    for entry in steps:
        figures = entry.rollouts
        assert figures is not None and 0 <= figures.mean_reward <= 1
        assert figures.solved.dialogues == 4 and len(figures.solved.solved) == 2
        assert figures.student_tokens > 0 and figures.rollout_seconds > 0
        assert figures.update_seconds and figures.update_seconds > 0 and entry.loss is not None
        assert StepReport.from_json(entry.to_json()) == entry
    evaluations = [entry for entry in logs if isinstance(entry, HeldOutReport)]
    assert [entry.step for entry in evaluations] == [0, 1, 2]
    assert all(entry.solved.dialogues == 3 for entry in evaluations)
    assert stored == [(1, 2), (2, 2)], "half of each step's 4 dialogues"
    again = train_online(
        training,
        online,
        base_model=tiny_model_dir,
        tasks=_tasks(4),
        protocol=DIDACTIC,
        teacher=load_generator(RoleSpec("scripted", "feedback-teacher")),
        output_dir=tmp_path / "run",
    )
    assert again.final_dir == result.final_dir and again.heldout == result.heldout


def test_a_stopped_online_run_resumes_to_the_weights_of_an_uninterrupted_one(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    """Stopped in its second epoch (three tasks, one a step), resumed: it plays the tasks the
    uninterrupted run played at every step, and ends with its weights."""
    import torch
    from safetensors.torch import load_file

    from models_gpu.training.online import train_online

    training = TrainingConfig(
        learning_rate=1e-3, max_steps=6, seed=5, device="cpu", precision="float32",
        gradient_checkpointing=False, logging_steps=1, save_steps=1, max_length=256,
    )  # fmt: skip
    online = OnlineConfig(
        group_size=2, tasks_per_step=1, horizon=2, max_new_tokens=6, store_share=1.0
    )
    teacher = load_generator(RoleSpec("scripted", "feedback-teacher"))

    def train(out: Path, played: dict[int, int], should_stop: Any = None) -> Any:
        def record(step: int, results: Any) -> None:
            played[step] = results[0].task_id

        return train_online(
            training, online, base_model=tiny_model_dir, tasks=_tasks(3), protocol=DIDACTIC,
            teacher=teacher, output_dir=out, on_rollouts=record, should_stop=should_stop,
        )  # fmt: skip

    whole_played: dict[int, int] = {}
    whole = train(tmp_path / "whole", whole_played)
    steps: list[int] = []
    cut_played: dict[int, int] = {}
    stopped = train(
        tmp_path / "cut", cut_played, should_stop=lambda: steps.append(1) or len(steps) >= 4
    )
    assert stopped.stopped and stopped.global_step == 4 and stopped.final_dir is None
    resumed = train(tmp_path / "cut", cut_played)
    assert resumed.resumed_from and resumed.resumed_from.endswith("checkpoint-4")
    assert cut_played == whole_played, "the same task at every step, after the resume too"
    assert [step for step, _ in whole.reward_history] == [1, 2, 3, 4, 5, 6]
    assert resumed.reward_history[-1] == whole.reward_history[-1], "step 6 played the same"
    assert resumed.final_dir and whole.final_dir
    weights = load_file(str(Path(whole.final_dir) / "model.safetensors"))
    again = load_file(str(Path(resumed.final_dir) / "model.safetensors"))
    assert all(torch.equal(weights[name], again[name]) for name in weights)
