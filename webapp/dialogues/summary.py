"""What a dialogue's turns say about it, copied onto the dialogue's own row so that the
transcript list filters on columns instead of a subquery over the turns per dialogue (and, the
same way, its run's student model's name, for the list's sort).

Dialogues are written once: ``services.dialogues_store`` computes these from the turns it
stores (``turn_summary``), and the migration that added the columns filled them in for the
dialogues already stored (``backfill``, with the same function).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db.models import OuterRef, Subquery

# One bit per kind of turn, for "has a turn of each of these kinds". Stored in the database:
# never renumber a kind; a new kind takes the next free bit.
KIND_BITS = {"attempt": 1, "question": 2, "feedback": 4, "shard": 8, "other": 16}


def kinds_mask(kinds: Iterable[str]) -> int:
    mask = 0
    for kind in kinds:
        mask |= KIND_BITS[kind]
    return mask


def masks_with(mask: int) -> list[int]:
    """Every value of ``turn_kinds`` that has all the bits of ``mask``."""
    return [value for value in range(1 << len(KIND_BITS)) if value & mask == mask]


def turn_summary(turns: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``leaked``: some teacher turn was flagged as revealing the answer. ``changed_answer``: the
    student's attempts hold at least two distinct non-empty extracted answers, which is exactly
    "some attempt's answer differs from the previous one" (a sequence with two distinct values
    has two neighbours that differ). ``turn_kinds``: the kinds present, as ``KIND_BITS``."""
    answers = {
        turn["extracted_answer"]
        for turn in turns
        if turn["role"] == "student" and turn["kind"] == "attempt" and turn["extracted_answer"]
    }
    return {
        "leaked": any(turn["role"] == "teacher" and turn["leak_flag"] for turn in turns),
        "changed_answer": len(answers) >= 2,
        "turn_kinds": kinds_mask({turn["kind"] for turn in turns}),
    }


def backfill(*, dialogue_model: Any, turn_model: Any, task_model: Any, chunk: int = 2000) -> int:
    """Fill the copied columns of every stored dialogue from its task and turns (models are
    passed in, so a migration can hand over its historical ones); returns how many dialogues.

    The turn facts come from ``turn_summary`` itself, a chunk of dialogues at a time (one read
    of their turns, then one UPDATE per distinct summary, of which a chunk has a handful), so
    they are the very values ``dialogues_store`` writes, at a cost linear in the turns whatever
    the planner's statistics (a fresh bulk load has none)."""
    dialogue_model.objects.update(
        task_position=Subquery(
            task_model.objects.filter(pk=OuterRef("task_id")).values("position")[:1]
        )
    )
    fields = ("dialogue_id", "role", "kind", "extracted_answer", "leak_flag")
    done, last = 0, 0
    while ids := list(
        dialogue_model.objects.filter(pk__gt=last)
        .order_by("pk")
        .values_list("pk", flat=True)[:chunk]
    ):
        last = ids[-1]
        turns: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for row in turn_model.objects.filter(dialogue_id__in=ids).values(*fields):
            turns[row["dialogue_id"]].append(row)
        alike: dict[tuple[tuple[str, Any], ...], list[int]] = defaultdict(list)
        for pk in ids:
            alike[tuple(sorted(turn_summary(turns[pk]).items()))].append(pk)
        for summary, pks in alike.items():
            dialogue_model.objects.filter(pk__in=pks).update(**dict(summary))
        done += len(ids)
    return done


def fill_student_names(*, dialogue_model: Any, run_model: Any) -> None:
    """Copy each run's student model's name onto its dialogues (one UPDATE; models passed in,
    as for ``backfill``)."""
    dialogue_model.objects.update(
        student_name=Subquery(
            run_model.objects.filter(pk=OuterRef("run_id")).values("student__name")[:1]
        )
    )
