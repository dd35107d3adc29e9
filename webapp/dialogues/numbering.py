"""One numbering of a dialogue's messages, the same on every page and in every export.

A dialogue is a list of messages: its ``Turn`` rows, in ``Turn.index`` order from 0. Two numbers
name a message, and every page and export uses these two and no other:

- **turn k** (``Turn.round``, from 1): the student's k-th reply and what answered it, as in
  "accuracy after turn k". A turn can hold several messages (a shard before the reply, the
  teacher's feedback after it).
- **message #n** (``index + 1``, from 1): the message's place in the conversation.

A message reads "Teacher · turn 2 · message #4" (``MessageRef.label``), and links to
``/dialogues/<id>/#message-4`` (``MessageRef.url``), where the dialogue page gives it that id.
Links written before this numbering point at ``#turn-<index>`` (0-based); the dialogue page
keeps those ids too (``legacy_anchor``). Exports carry ``index`` (from 0), ``message_number``
(``index + 1``) and ``round`` (turn k) for each turn.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import reverse


def message_number(index: int) -> int:
    """The number a page shows for the message at 0-based ``index``: #1 is the first."""
    return index + 1


def message_anchor(index: int) -> str:
    """The id of the message at ``index`` on the dialogue page (a URL fragment without #)."""
    return f"message-{message_number(index)}"


def legacy_anchor(index: int) -> str:
    """The id links used before ``message_anchor`` (``#turn-<0-based index>``); still served."""
    return f"turn-{index}"


@dataclass(frozen=True)
class MessageRef:
    """One message of one dialogue, as pages name and link it."""

    dialogue_id: int
    index: int
    round: int | None = None  # turn k, when known
    role_display: str = ""  # "Teacher", "Student", ...; "" when not known

    @property
    def number(self) -> int:
        return message_number(self.index)

    @property
    def anchor(self) -> str:
        return message_anchor(self.index)

    @property
    def url(self) -> str:
        return f"{reverse('dialogue_detail', args=[self.dialogue_id])}#{self.anchor}"

    @property
    def label(self) -> str:
        """The label, e.g. "Teacher · turn 2 · message #4" (the parts that are known)."""
        parts = [
            self.role_display,
            f"turn {self.round}" if self.round is not None else "",
            f"message #{self.number}",
        ]
        return " · ".join(part for part in parts if part)

    @property
    def full_label(self) -> str:
        """The label with its dialogue: "dialogue #100 · Teacher · turn 2 · message #4"."""
        return f"dialogue #{self.dialogue_id} · {self.label}"
