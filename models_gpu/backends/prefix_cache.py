"""Prefix reuse for the ``transformers`` backend: a dialogue's next round prefills only what was
added since its last one.

Every round sends a dialogue's whole conversation again, so without reuse round k prefills the
task, every earlier reply and every earlier feedback once more, and a round's cost grows with the
dialogue's history. A causal model's keys and values for a token depend only on the weights and
the tokens up to it, so whatever the new prompt shares with the token ids of the dialogue's last
call can be taken from that call instead of being computed again.

What is kept: per seed (the engine gives every call of a dialogue its job's seed), the ids of the
last call of that seed, its prompt and reply except the reply's last token (``generate`` never
feeds the last sampled token back, so it has no keys yet), with their keys and values per layer.
A new prompt reuses its longest common prefix with those ids, leaving at least one token to feed:
the first new logits need a forward pass. The common prefix, not an exact match, is what makes
reuse safe when a chat template renders an earlier turn differently, or when decoding a reply
and tokenizing it again gives other ids than those sampled: reuse stops where the ids part.

Batched rows reuse different lengths. Each row is laid out as [padding, its reused prefix,
padding, its new tokens] with the padding masked; ``generate`` numbers positions by counting the
attention mask, so every real token keeps the position it has in its own conversation.

The store holds at most ``budget_bytes`` of keys and values, least recently used first out; the
generator that owns it lives as long as its weights stay the same (online training makes a new
one for every step). Only models whose cache is all full-attention layers are reused: a sliding-
window or recurrent layer does not hold every earlier token, so such models prefill in full.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class StoredPrefix:
    """Token ids and, per layer, their keys and values: (heads, len(ids), head dim) each."""

    ids: tuple[int, ...]
    keys: tuple[torch.Tensor, ...]
    values: tuple[torch.Tensor, ...]

    @property
    def nbytes(self) -> int:
        return sum(t.nelement() * t.element_size() for t in (*self.keys, *self.values))


def common_prefix(first: Sequence[int], second: Sequence[int]) -> int:
    """How many leading ids the two sequences share."""
    length = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        length += 1
    return length


class PrefixCache:
    """The last call's prefix of each seed, within a byte budget (least recently used out)."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = budget_bytes
        self._prefixes: OrderedDict[int, StoredPrefix] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._prefixes)

    def reusable(self, seed: int, ids: Sequence[int]) -> tuple[StoredPrefix | None, int]:
        """The stored prefix for ``seed`` and how many of ``ids`` it covers (0: none)."""
        stored = self._prefixes.get(seed)
        if stored is None:
            return None, 0
        length = min(common_prefix(stored.ids, ids), len(ids) - 1)
        return (stored, length) if length > 0 else (None, 0)

    def store(self, seed: int, prefix: StoredPrefix) -> None:
        old = self._prefixes.pop(seed, None)
        if old is not None:
            self._bytes -= old.nbytes
        if prefix.nbytes > self.budget_bytes:
            return
        self._prefixes[seed] = prefix
        self._bytes += prefix.nbytes
        while self._bytes > self.budget_bytes:
            _, evicted = self._prefixes.popitem(last=False)
            self._bytes -= evicted.nbytes


@dataclass(frozen=True)
class Row:
    """One request of a micro-batch: its prompt ids and what of them is reused."""

    ids: Sequence[int]
    prefix: StoredPrefix | None
    reused: int

    @property
    def new(self) -> int:
        return len(self.ids) - self.reused


@dataclass(frozen=True)
class Layout:
    """A micro-batch laid out for ``generate``: row i is [padding, its reused prefix, padding,
    its new tokens]; ``past`` holds the reused keys and values (None when nothing is reused)."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    past: Any  # a transformers DynamicCache, or None
    past_width: int
    rows: tuple[Row, ...]

    @property
    def width(self) -> int:
        return int(self.input_ids.shape[1])

    def real_positions(self, row: int) -> torch.Tensor:
        """Where row ``row``'s prompt tokens sit in the layout, in order."""
        import torch

        entry = self.rows[row]
        reused_from = self.past_width - entry.reused
        return torch.cat(
            [
                torch.arange(reused_from, self.past_width),
                torch.arange(self.width - entry.new, self.width),
            ]
        )


def lay_out(rows: Sequence[Row], pad_id: int, device: torch.device) -> Layout:
    import torch

    past_width = max(row.reused for row in rows)
    new_width = max(row.new for row in rows)
    width = past_width + new_width
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(rows), width), dtype=torch.long)
    for index, row in enumerate(rows):
        if row.reused:
            span = slice(past_width - row.reused, past_width)
            input_ids[index, span] = torch.tensor(row.ids[: row.reused], dtype=torch.long)
            attention_mask[index, span] = 1
        input_ids[index, width - row.new :] = torch.tensor(row.ids[row.reused :], dtype=torch.long)
        attention_mask[index, width - row.new :] = 1
    past = _past(rows, past_width, device) if past_width else None
    return Layout(input_ids.to(device), attention_mask.to(device), past, past_width, tuple(rows))


def _past(rows: Sequence[Row], past_width: int, device: torch.device) -> Any:
    """The reused keys and values as one batched cache, right-aligned at ``past_width``."""
    import torch
    from transformers.cache_utils import DynamicCache

    some = next(row.prefix for row in rows if row.prefix is not None)
    layers = []
    for layer in range(len(some.keys)):
        heads, _, head_dim = some.keys[layer].shape
        shape = (len(rows), heads, past_width, head_dim)
        keys = torch.zeros(shape, dtype=some.keys[layer].dtype, device=device)
        values = torch.zeros_like(keys)
        for index, row in enumerate(rows):
            if row.prefix is not None and row.reused:
                keys[index, :, past_width - row.reused :] = row.prefix.keys[layer][:, : row.reused]
                values[index, :, past_width - row.reused :] = row.prefix.values[layer][
                    :, : row.reused
                ]
        layers.append((keys, values))
    return DynamicCache(ddp_cache_data=layers)


def full_attention_layers(cache: Any) -> list[Any] | None:
    """The cache's layers when every one holds every earlier token, else None."""
    from transformers.cache_utils import DynamicCache, DynamicLayer

    if not isinstance(cache, DynamicCache):
        return None
    layers = list(cache.layers)
    if not layers or any(type(layer) is not DynamicLayer for layer in layers):
        return None
    return layers


def prefixes_after(
    layout: Layout, cache: Any, sampled: Sequence[Sequence[int]]
) -> list[StoredPrefix] | None:
    """Each row's prompt and reply (but its last token) with their keys and values, taken from
    the cache ``generate`` returned; None when the model's cache cannot be reused."""
    import torch

    layers = full_attention_layers(cache)
    if layers is None:
        return None
    prefixes = []
    for index, (row, reply) in enumerate(zip(layout.rows, sampled, strict=True)):
        fed = max(len(reply) - 1, 0)
        positions = torch.cat(
            [layout.real_positions(index), torch.arange(layout.width, layout.width + fed)]
        ).to(layers[0].keys.device)
        prefixes.append(
            StoredPrefix(
                ids=(*row.ids, *reply[:fed]),
                keys=tuple(layer.keys[index].index_select(1, positions) for layer in layers),
                values=tuple(layer.values[index].index_select(1, positions) for layer in layers),
            )
        )
    return prefixes
