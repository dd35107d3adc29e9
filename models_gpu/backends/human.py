"""The ``human`` backend: a person in the browser plays the role.

A person answers later, not within a call, so the engine never calls this generator: it parks
each dialogue whose next speaker is a person (``types.ParkedDialogue``) and goes on with the
rest; the web side stores the parked dialogue, shows the person exactly the request the engine
built for their role, and, once they answer, plays the dialogue again from its turns with their
reply (``DialogueJob.person_reply``).
"""

from __future__ import annotations

from collections.abc import Sequence

from models_gpu.spec.run import RoleSpec
from models_gpu.types import Generation, GenerationRequest


class Person:
    """Marks a role played by a person (see the module docstring)."""

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        raise TypeError("a person is not called: the engine parks dialogues that wait for one")


def load_person(spec: RoleSpec) -> Person:
    return Person()
