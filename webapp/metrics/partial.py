"""What a run's figures count while it plays, and after it stopped early (cancelled, failed).

The engine plays a run's dialogues in batches of ``batch_size``, every dialogue of a batch one
round at a time, and a dialogue is stored when it ends: within a batch the solved ones are
stored first. Counting the stored dialogues alone would overstate accuracy while a run plays
(and forever, for a run cancelled mid-batch), so every figure of a run that has not played out
counts one set of dialogues, the same for every figure and every turn k:

- the dialogues of the batches that finished (every one of them ended: nothing is left out for
  how it went), when there are any. Their figures are final: they will not change when the run
  ends, and accuracy after turn k is over one denominator, so it never decreases in k;
- otherwise (the first batch is still in play, or a run where people play, which is one batch)
  the batch in play, for the turns it has played: its dialogues still going count as not solved
  by those turns, which is what they are. Turns it has not played are not known yet, and the
  figures that need whole dialogues (pass@k, turns to solve, behaviour, breakdowns) wait for
  the batch to end.

The dialogues of a batch still in play (or cut short by a cancel) that ended early are stored
and readable, and counted once their batch has ended: ``Counted.stored_not_counted``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class BatchInPlay:
    """The batch of dialogues the worker is playing, after its latest round.

    The worker writes this after every round (``Run.batch_in_play``), in the transaction that
    stores the dialogues ending in it. ``going`` is how many dialogues of the batch played every
    round up to ``round`` and go on; ``ended`` how many ended (and were stored: how each ended
    is in its row). A worker that resumes a run after a crash replays
    the batch's unfinished dialogues from the start in its first batch, and carries the ones
    that had ended (``resumed``): they count when that batch ends, with their batch-mates.
    """

    round: int = 0
    going: int = 0
    ended: int = 0

    def after_round(self, round_number: int, going: int, ended: int) -> BatchInPlay:
        """This batch after ``round_number``, in which ``ended`` dialogues ended and ``going``
        went on."""
        return BatchInPlay(round_number, going, self.ended + ended)

    def resumed(self) -> BatchInPlay:
        """What a resumed worker's first batch starts from: the dialogues of this (cut short)
        batch that ended stay in it, and it replays the rest from round 1."""
        return replace(self, round=0, going=0) if self.going else BatchInPlay()

    def to_json(self) -> dict[str, Any]:
        return {"round": self.round, "going": self.going, "ended": self.ended}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BatchInPlay:
        """``{}`` (nothing played yet, or nothing in play) is the empty batch. Records written
        before also counted the batch's solved dialogues by turn ("solved_at"): their stored
        rows say it, so it is not read."""
        return cls(data.get("round", 0), data.get("going", 0), data.get("ended", 0))


@dataclass(frozen=True)
class Counted:
    """Which of a run's dialogues its figures count (module docstring).

    ``dialogues`` is the denominator of accuracy after turn k for every k up to
    ``through_turn``; ``complete`` says whether they are whole dialogues (finished batches),
    so that every figure can be computed over them, or the batch in play (accuracy only);
    ``stored_not_counted`` the dialogues stored but left out; ``expected`` every dialogue the
    run will have; ``partial`` whether the run has not played out.
    """

    dialogues: int
    through_turn: int
    complete: bool
    stored_not_counted: int
    expected: int
    partial: bool

    @property
    def description(self) -> str:
        """What the figures are over, as every page and chart says it."""
        if not self.partial:
            return f"all {self.dialogues} dialogues"
        if self.complete:
            return f"{self.dialogues} of {self.expected} dialogues (the batches that finished)"
        return (
            f"the {self.dialogues} dialogues of the batch in play, through turn {self.through_turn}"
        )

    @property
    def known(self) -> bool:
        return self.dialogues > 0 and self.through_turn > 0

    @property
    def whole_dialogues(self) -> bool:
        """Figures that need whole dialogues (pass@k, behaviour, breakdowns) can be computed."""
        return self.complete and self.dialogues > 0


def counted(
    *, stored: int, batch: BatchInPlay, max_turns: int, expected: int, played_out: bool
) -> Counted:
    """What the figures count, given the ``stored`` dialogues, the ``batch`` in play, the run's
    T and how many dialogues it will have; ``played_out``: the run succeeded."""
    if played_out or not batch.going:
        return Counted(stored, max_turns, True, 0, expected, not played_out)
    in_batch = min(batch.ended, stored)
    if stored > in_batch:
        return Counted(stored - in_batch, max_turns, True, in_batch, expected, True)
    return Counted(in_batch + batch.going, batch.round, False, 0, expected, True)
