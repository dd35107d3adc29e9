"""Reads for forks: a dialogue's family of branches, two branches aligned at their fork point,
and a fork run's (parent, fork) pairs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db.models import F, OuterRef, QuerySet, Subquery

from models_gpu.spec.run import RoleSpec, RunConfig
from webapp.dialogues.models import Dialogue, Turn
from webapp.dialogues.selectors import AlignedRound, align_rounds
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Protocol, Run

# A family bigger than this is cut (and says so): a page lists it whole.
MAX_TREE_NODES = 300
# Ancestors followed up from a dialogue: forks of forks, not an unbounded chain.
MAX_DEPTH = 50


def _fork_round() -> Subquery:
    """The turn (round) of a fork's last kept turn: its own copy of it."""
    return Subquery(
        Turn.objects.filter(dialogue_id=OuterRef("pk"), index=OuterRef("fork_turns") - 1).values(
            "round"
        )[:1]
    )


def _tree_rows() -> QuerySet[Dialogue]:
    return (
        Dialogue.objects.defer("search_document")
        .select_related("run", "run__teacher")
        .annotate(fork_round=_fork_round())
    )


@dataclass(frozen=True)
class PlayedWith:
    """How a run played its dialogues, as the fork forms start from it: the configuration they
    were played under (``Run.dialogue_config``) and the rows it names. An evaluation's rows are
    its own columns. An online training run's are its rollouts' (the base model as the
    student: the policy at each training step is no model of the registry), which its columns
    do not name (they name its held-out evaluation's); ``rollouts`` says so."""

    config: RunConfig
    student: ModelSpec | None
    teacher: ModelSpec | None
    user_simulator: ModelSpec | None
    judge: ModelSpec | None
    protocol: Protocol | None
    rollouts: bool


def played_with(run: Run) -> PlayedWith:
    """How ``run`` played its dialogues; ``ValueError`` for a run that plays none (offline
    training). A training run's rows are read by the ids its configuration names (two queries);
    one deleted since is None."""
    config = run.dialogue_config
    if config is None:
        raise ValueError(f"run {run.pk} plays no dialogues: it has no dialogue to fork")
    if run.kind != Run.Kind.TRAIN:
        roles = (run.student, run.teacher, run.user_simulator, run.judge)
        return PlayedWith(config, *roles, protocol=run.protocol, rollouts=False)
    specs = (config.student, config.teacher, config.user_simulator, config.judge)
    models = ModelSpec.objects.in_bulk([spec.id for spec in specs if spec and spec.id])

    def row(spec: RoleSpec | None) -> ModelSpec | None:
        return models.get(spec.id) if spec is not None and spec.id is not None else None

    protocol = (
        Protocol.objects.filter(pk=config.protocol.id).first() if config.protocol.id else None
    )
    student, teacher, user_simulator, judge = map(row, specs)
    return PlayedWith(
        config, student, teacher, user_simulator, judge, protocol=protocol, rollouts=True
    )


@dataclass
class BranchNode:
    """A dialogue in its family tree, with the branches forked from it."""

    dialogue: Dialogue
    children: list[BranchNode] = field(default_factory=list)

    @property
    def teacher_name(self) -> str:
        played = self.dialogue.run.dialogue_config
        teacher = played.teacher if played is not None else None
        return teacher.name if teacher is not None else ""


@dataclass(frozen=True)
class BranchTree:
    root: BranchNode
    size: int
    truncated: bool


def ancestors(dialogue: Dialogue) -> list[Dialogue]:
    """``dialogue``'s parent, its parent's parent, ... up to the root (one query a level)."""
    chain: list[Dialogue] = []
    seen = {dialogue.pk}
    parent_id = dialogue.parent_id
    while parent_id is not None and parent_id not in seen and len(chain) < MAX_DEPTH:
        parent = Dialogue.objects.defer("search_document").filter(pk=parent_id).first()
        if parent is None:
            break
        chain.append(parent)
        seen.add(parent.pk)
        parent_id = parent.parent_id
    return chain


def has_branches(dialogue: Dialogue) -> bool:
    return dialogue.parent_id is not None or dialogue.forks.exists()


def branch_tree(dialogue: Dialogue) -> BranchTree:
    """The family ``dialogue`` belongs to, from its topmost ancestor down (one query a
    generation), at most ``MAX_TREE_NODES`` dialogues."""
    chain = ancestors(dialogue)
    root_id = chain[-1].pk if chain else dialogue.pk
    root = BranchNode(_tree_rows().get(pk=root_id))
    nodes = {root_id: root}
    frontier = [root_id]
    truncated = False
    while frontier and not truncated:
        children = list(_tree_rows().filter(parent_id__in=frontier).order_by("run_id", "pk"))
        frontier = []
        for child in children:
            if child.pk in nodes:
                continue
            if len(nodes) >= MAX_TREE_NODES:
                truncated = True
                break
            node = BranchNode(child)
            nodes[child.pk] = node
            assert child.parent_id is not None  # a child of the frontier
            nodes[child.parent_id].children.append(node)
            frontier.append(child.pk)
    return BranchTree(root=root, size=len(nodes), truncated=truncated)


def _kept_limits(dialogue: Dialogue) -> dict[int, int | None]:
    """For ``dialogue`` and each ancestor, how many of ``dialogue``'s first turns are copies of
    that ancestor's (``None`` for itself: all of them)."""
    limits: dict[int, int | None] = {dialogue.pk: None}
    limit: int | None = None
    current = dialogue
    for parent in ancestors(dialogue):
        kept = current.fork_turns or 0
        limit = kept if limit is None else min(limit, kept)
        limits[parent.pk] = limit
        current = parent
    return limits


def shared_turn_count(a: Dialogue, b: Dialogue) -> int | None:
    """How many first turns ``a`` and ``b`` share as copies of their nearest common ancestor
    (their fork point); ``None`` when they are not of one family."""
    limits_a, limits_b = _kept_limits(a), _kept_limits(b)
    common = [pk for pk in limits_a if pk in limits_b]  # nearest to ``a`` first
    if not common:
        return None
    counts = [limit for limit in (limits_a[common[0]], limits_b[common[0]]) if limit is not None]
    return min(counts) if counts else None


@dataclass(frozen=True)
class BranchComparison:
    """Two branches: the turns they share once, then each one's own turns round by round."""

    a: Dialogue
    b: Dialogue
    related: bool
    shared: list[Turn]
    rounds: list[AlignedRound]


def branch_comparison(*, a_id: int, b_id: int) -> BranchComparison:
    """``Dialogue.DoesNotExist`` when either is missing."""
    rows = (
        Dialogue.objects.defer("search_document")
        .select_related("run", "run__student", "run__teacher")
        .prefetch_related("turns")
    )
    a, b = rows.get(pk=a_id), rows.get(pk=b_id)
    turns_a, turns_b = list(a.turns.all()), list(b.turns.all())
    shared = shared_turn_count(a, b)
    count = 0 if shared is None else min(shared, len(turns_a), len(turns_b))
    if shared is None and a.pk == b.pk:
        count = len(turns_a)
    return BranchComparison(
        a=a,
        b=b,
        related=shared is not None or a.pk == b.pk,
        shared=turns_a[:count],
        rounds=align_rounds(left=turns_a[count:], right=turns_b[count:]),
    )


@dataclass(frozen=True)
class ForkPair:
    """A stored fork and its parent, as the counterfactual comparison reads them."""

    fork_id: int
    parent_id: int
    fork_round: int  # the turn the fork played on after (its last kept turn's)
    parent_first_correct: int | None
    fork_first_correct: int | None


def fork_pairs(*, run: Run) -> list[ForkPair]:
    """The run's forks that ended (they are stored only then), each with its parent (forks
    whose parent was deleted since are left out). One query."""
    rows = (
        Dialogue.objects.filter(run=run, parent__isnull=False)
        .annotate(fork_round=_fork_round(), parent_first_correct=F("parent__first_correct_turn"))
        .order_by("sample_index")
        .values("pk", "parent_id", "fork_round", "parent_first_correct", "first_correct_turn")
    )
    return [
        ForkPair(
            fork_id=row["pk"],
            parent_id=row["parent_id"],
            fork_round=row["fork_round"] or 0,
            parent_first_correct=row["parent_first_correct"],
            fork_first_correct=row["first_correct_turn"],
        )
        for row in rows
    ]


def dialogues_with_turns(ids: Sequence[int]) -> list[Dialogue]:
    """These dialogues with their turns, in this order (for ``counterfactual_parents``)."""
    rows = (
        Dialogue.objects.defer("search_document")
        .select_related("task")
        .prefetch_related("turns")
        .in_bulk(list(ids))
    )
    return [rows[pk] for pk in ids if pk in rows]
