"""Live accuracy while a run plays: the worker records, with each round's ended dialogues, how
far the rest of its batch got, so the run page counts the batches that finished (or the batch in
play, through the turns it played) and never the batch's early enders alone, solved ones first.
The engine, the worker's recorder and the database are real; a worker is stopped mid-run by its
"should I stop?", as a kill would stop it, and the next one resumes the run."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.utils import timezone

from models_gpu.backends.scripted import ScriptedGenerator
from models_gpu.engine import run_dialogues
from models_gpu.spec.run import RunConfig
from models_gpu.types import GenerationRequest
from tests.factories import ProtocolFactory, TaskFactory, TaskSetFactory, TeacherFactory, frozen_run
from webapp.core.heartbeat import stale_after
from webapp.dialogues.models import Dialogue
from webapp.metrics.figures import TurnAccuracy
from webapp.metrics.partial import BatchInPlay
from webapp.runs import selectors, services
from webapp.runs.models import Run
from workers.evaluation import RoundRecorder, load_role_generators, pending_jobs

pytestmark = pytest.mark.django_db

STALE = stale_after()
MAX_TURNS = 5
# Task i is solved at round SOLVED_AT[i % 20] and never otherwise: 15% at turn 1, 20% by turn 2,
# 25% by turn 4, like the house model of the issue; every 20 tasks alike, so a batch of a
# multiple of 20 tasks is the whole run in small.
SOLVED_AT = {0: 1, 1: 1, 2: 1, 3: 2, 4: 4}
TASK = re.compile(r"What is (\d+) \+")


def student_reply(request: GenerationRequest) -> str:
    prompt = next(message.content for message in request.messages if message.role == "user")
    task = int(TASK.findall(prompt)[0])
    round_number = 1 + sum(message.role == "assistant" for message in request.messages)
    right = SOLVED_AT.get(task % 20) == round_number
    return f"The answer is {2 * task + 1 if right else -1}."


STUDENT = ScriptedGenerator(student_reply)


def make_run(tasks: int, *, samples: int, batch_size: int) -> Run:
    task_set = TaskSetFactory()
    for i in range(tasks):
        TaskFactory(task_set=task_set, position=i, prompt=f"What is {i} + {i + 1}?",
                    reference={"answer": str(2 * i + 1)})  # fmt: skip
    run = frozen_run(
        task_set=task_set, teacher=TeacherFactory(), protocol=ProtocolFactory(max_turns=MAX_TURNS),
        batch_size=batch_size, progress_total=tasks * samples,
    )  # fmt: skip
    config = RunConfig.from_json({**run.config, "samples_per_task": samples})
    Run.objects.filter(pk=run.pk).update(config=config.to_json())
    return Run.objects.get(pk=run.pk)  # not refresh_from_db: frozen_config is cached


def play_until(run: Run, stop: Callable[[list[int]], bool] = lambda rounds: False) -> None:
    """One worker's claim on the run, playing what is not stored yet until ``stop(the rounds
    played so far)`` says so; then its heartbeat goes stale, as a killed worker's would."""
    assert services.run_claim(run_id=run.pk, worker="w", stale_after=STALE)
    config = run.frozen_config
    previous = Run.objects.get(pk=run.pk).batch_in_play  # what the last worker recorded
    recorder = RoundRecorder(run.pk, config, BatchInPlay.from_json(previous))
    rounds: list[int] = []

    def round_played(round_number: int, going: int) -> None:
        rounds.append(round_number)
        recorder.round_played(round_number, going)

    run_dialogues(
        pending_jobs(run.pk, config),
        config.protocol,
        student=STUDENT,
        teacher=load_role_generators(config.roles())["teacher"],
        on_finished=recorder.ended,
        on_round=round_played,
        should_stop=lambda: stop(rounds),
        batch_size=config.batch_size,
    )
    Run.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - 2 * STALE)


def accuracy(run: Run, *, stored_only: bool = False) -> list[TurnAccuracy]:
    """The run page's accuracy after turn k; ``stored_only``: over every stored (ended)
    dialogue, the early enders of the batch in play included."""
    run = Run.objects.get(pk=run.pk)
    if stored_only:
        run.batch_in_play = {}
    return selectors.run_metrics(run=run).accuracy_by_turn


def totals(curve: list[TurnAccuracy]) -> list[int | None]:
    return [None if p.accuracy is None else p.accuracy.total for p in curve]


def test_mid_run_accuracy_is_the_final_accuracy_of_the_batches_that_finished() -> None:
    """Two batches of 160 dialogues; the worker stops after turn 2 of the second, with 60% of
    the dialogues stored. Counting every stored one overstates every turn's accuracy (25% at
    turn 1 for a final 15%), since the second batch's ended dialogues are its solved ones. The
    run page counts the first batch, whose figures are final for its dialogues: here, where
    every 20 tasks are alike, the run's final figures."""
    run = make_run(160, samples=2, batch_size=160)
    play_until(run, lambda rounds: rounds.count(1) == 2 and rounds[-1] == 2)
    assert Dialogue.objects.filter(run=run).count() == 192  # 160 + the 20% solved by turn 2
    live, old = accuracy(run), accuracy(run, stored_only=True)

    play_until(run)  # a second worker plays the rest
    services.run_finish(run_id=run.pk, status=Run.Status.SUCCEEDED)
    final = accuracy(run)
    assert [round(point.accuracy.rate, 3) for point in final] == [0.15, 0.2, 0.2, 0.25, 0.25]  # type: ignore[union-attr]
    assert [p.accuracy.rate for p in live] == [p.accuracy.rate for p in final]  # type: ignore[union-attr]
    assert totals(live) == [160] * MAX_TURNS and totals(final) == [320] * MAX_TURNS
    assert round(old[0].accuracy.rate, 3) == 0.25 and totals(old) == [192] * MAX_TURNS  # type: ignore[union-attr]


def test_a_resumed_batch_carries_what_the_killed_worker_stored() -> None:
    """The killed worker's batch (the run's only one) had played turn 3: it counts for turns 1
    to 3. The resumed worker replays its unfinished dialogues from turn 1 and carries the 8 it
    had stored, so after its turn 1 every dialogue counts for turn 1, once."""
    run = make_run(40, samples=1, batch_size=40)
    play_until(run, lambda rounds: rounds[-1:] == [3])
    before = BatchInPlay.from_json(Run.objects.get(pk=run.pk).batch_in_play)
    assert (before.round, before.going, before.ended) == (3, 32, 8)
    live_before = accuracy(run)
    assert totals(live_before) == [40, 40, 40, None, None]

    play_until(run, lambda rounds: rounds[-1:] == [1])
    after = BatchInPlay.from_json(Run.objects.get(pk=run.pk).batch_in_play)
    assert (after.round, after.going, after.ended) == (1, 32, 8), "the carried dialogues stay"
    live_after = accuracy(run)
    assert live_after[0] == live_before[0], "the replayed dialogues count once, as before"
    assert totals(live_after) == [40, None, None, None, None]

    play_until(run)
    services.run_finish(run_id=run.pk, status=Run.Status.SUCCEEDED)
    assert totals(accuracy(run)) == [40] * MAX_TURNS
