from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models

if TYPE_CHECKING:
    from webapp.runs.models import Run


class LostInConversation(models.Model):
    """One Lost-in-Conversation experiment (Laban et al., 2025): the instructions of a sharded
    task set played under three conditions by one student, each a run of ``repeats`` samples per
    instruction: FULL (the original instruction in one turn), CONCAT (all its shards in one
    turn) and SHARDED (a user simulator reveals one shard per turn, up to ``max_turns``).
    ``webapp.experiments.lic`` computes its metrics from the three runs' dialogues."""

    name = models.CharField(max_length=200)
    task_set = models.ForeignKey(
        "tasks.TaskSet", on_delete=models.PROTECT, related_name="lic_experiments"
    )
    student = models.ForeignKey(
        "models_registry.ModelSpec", on_delete=models.PROTECT, related_name="lic_experiments"
    )
    user_simulator = models.ForeignKey(
        "models_registry.ModelSpec", on_delete=models.PROTECT, related_name="+"
    )
    repeats = models.PositiveSmallIntegerField(help_text="Dialogues per instruction and condition.")
    max_turns = models.PositiveSmallIntegerField(
        help_text="Student turns in the SHARDED condition."
    )
    seed = models.PositiveIntegerField(default=0)
    full_run = models.ForeignKey("runs.Run", on_delete=models.PROTECT, related_name="+")
    concat_run = models.ForeignKey("runs.Run", on_delete=models.PROTECT, related_name="+")
    sharded_run = models.ForeignKey("runs.Run", on_delete=models.PROTECT, related_name="+")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "Lost-in-Conversation experiment"

    def __str__(self) -> str:
        return self.name

    @property
    def runs(self) -> dict[str, Run]:
        """The condition's run, by condition name, in the paper's order."""
        return {"FULL": self.full_run, "CONCAT": self.concat_run, "SHARDED": self.sharded_run}
