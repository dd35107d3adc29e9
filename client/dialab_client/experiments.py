"""``lab.experiments``: the transfer matrix and Lost-in-Conversation experiments' figures, as
their pages compute them (the JSON the API returns; ``/api/v1/docs`` describes each field)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dialab_client.client import Dialab


class Experiments:
    def __init__(self, lab: Dialab) -> None:
        self.lab = lab

    def transfer(self) -> dict[str, Any]:
        """``domains`` and ``rows``: each trained model's gain over its base at turn T on each
        evaluation domain (``gap``: value, 95% interval, p-value, paired over tasks)."""
        found: dict[str, Any] = self.lab.request("GET", "/experiments/transfer")
        return found

    def lost_in_conversation(self, experiment_id: int | None = None) -> Any:
        """Every Lost-in-Conversation experiment (id, name, runs), or one's figures: each
        condition's mean, aptitude and unreliability, the drop from full to sharded, and the
        score by the turn of the first attempt."""
        if experiment_id is None:
            return self.lab.request("GET", "/experiments/lost-in-conversation")
        return self.lab.request("GET", f"/experiments/lost-in-conversation/{experiment_id}")
