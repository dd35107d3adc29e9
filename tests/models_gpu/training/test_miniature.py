"""The miniature reproduction's tasks: held-out ranges are never trained on."""

from __future__ import annotations

import re

from models_gpu.training.miniature import HELD_OUT_EVERY, RANGE_SIZE, run_dir_name, split_tasks
from models_gpu.verifiers import verify


def _lower(prompt: str) -> int:
    match = re.search(r"between (\d+) and (\d+)", prompt)
    assert match, prompt
    assert int(match[2]) - int(match[1]) + 1 == RANGE_SIZE
    return int(match[1])


def test_held_out_ranges_are_never_trained_on() -> None:
    train, heldout = split_tasks(seed=0, heldout_count=20)
    assert len(heldout) == 20 and len({t.task_id for t in train + heldout}) == len(train) + 20
    assert all(_lower(t.prompt) % HELD_OUT_EVERY for t in train)
    assert all(_lower(t.prompt) % HELD_OUT_EVERY == 0 for t in heldout)
    for t in train[:20] + heldout[:20]:
        hidden = int(t.reference["answer"])
        assert _lower(t.prompt) <= hidden < _lower(t.prompt) + RANGE_SIZE
        assert verify(t, f"The answer is {hidden}.").correct
        assert verify(t, f"The answer is {hidden + 1}.").details["direction"] == "too_high"


def test_seeds_shuffle_the_training_order_and_draw_other_held_out_tasks() -> None:
    first, second = split_tasks(0, 20), split_tasks(1, 20)
    assert [t.prompt for t in first[0]] != [t.prompt for t in second[0]]
    assert sorted(t.prompt for t in first[0]) == sorted(t.prompt for t in second[0])
    assert split_tasks(0, 20)[1] == first[1]


def test_each_rollout_path_trains_in_a_directory_of_its_own() -> None:
    """Both paths in one work dir: the second was refused as another run's configuration. The
    transformers path keeps its old name, so that its earlier runs resume."""
    assert run_dir_name("online", 0, "transformers") == "online-seed0"
    assert run_dir_name("online", 0, "vllm") == "online-vllm-seed0"
