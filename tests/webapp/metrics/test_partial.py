"""What a run's figures count while it plays or after it stopped early (webapp.metrics.partial).
The pages: tests/webapp/runs/test_live_accuracy.py; the worker: tests/workers/test_live_rounds.py.
"""

from __future__ import annotations

from webapp.metrics.partial import BatchInPlay, Counted, counted


def test_a_batch_adds_up_its_rounds_and_reads_back_from_json() -> None:
    batch = BatchInPlay().after_round(1, 8, 2).after_round(2, 5, 3)
    assert batch == BatchInPlay(round=2, going=5, ended=5)
    assert BatchInPlay.from_json(batch.to_json()) == batch
    assert BatchInPlay.from_json({}) == BatchInPlay(), "nothing recorded: the empty batch"
    older = {"round": 2, "going": 5, "ended": 5, "solved_at": {"1": 2}}
    assert BatchInPlay.from_json(older) == batch, "a record written before still reads"


def test_a_resumed_worker_carries_the_ended_dialogues_of_a_batch_cut_short() -> None:
    cut_short = BatchInPlay(round=3, going=4, ended=2)
    assert cut_short.resumed() == BatchInPlay(0, 0, 2)
    assert BatchInPlay(round=5, going=0, ended=6).resumed() == BatchInPlay(), "it had ended"


def rule(stored: int, batch: BatchInPlay, *, played_out: bool = False) -> Counted:
    return counted(stored=stored, batch=batch, max_turns=5, expected=100, played_out=played_out)


def test_a_run_that_played_out_counts_every_dialogue() -> None:
    final = rule(100, BatchInPlay(5, 0, 40), played_out=True)
    assert (final.dialogues, final.through_turn, final.partial) == (100, 5, False)
    assert final.complete and final.stored_not_counted == 0


def test_finished_batches_are_counted_and_the_batch_in_play_waits() -> None:
    """The issue's cancelled run: 32 dialogues of finished batches, and a batch of 16 cut short
    at turn 4 with 4 solved (stored) and 12 still going: the figures are over the 32."""
    cancelled = rule(36, BatchInPlay(round=4, going=12, ended=4))
    assert (cancelled.dialogues, cancelled.through_turn) == (32, 5)
    assert cancelled.complete and cancelled.partial and cancelled.stored_not_counted == 4
    assert "32 of 100 dialogues" in cancelled.description


def test_without_a_finished_batch_the_batch_in_play_counts_for_the_turns_it_played() -> None:
    first = rule(4, BatchInPlay(round=2, going=12, ended=4))
    assert (first.dialogues, first.through_turn, first.complete) == (16, 2, False)
    assert first.stored_not_counted == 0 and not first.whole_dialogues
    assert "batch in play, through turn 2" in first.description


def test_between_batches_every_stored_dialogue_is_whole() -> None:
    between = rule(64, BatchInPlay(5, 0, 10))
    assert (between.dialogues, between.through_turn, between.partial) == (64, 5, True)
    nothing = rule(0, BatchInPlay())
    assert not nothing.known
