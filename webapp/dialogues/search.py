"""Searching transcripts for words: a dialogue matches when one of its turns matches the query.

PostgreSQL: stemmed full-text search in web-search syntax (words, "phrases", -exclusions, or).
Two ways, chosen by what the database parses the query into (``is_one_lexeme``):

- **One lexeme** (a single word, the common search). A dialogue has a turn with the lexeme
  exactly when the lexemes of all its turns together include it, so the dialogue's own
  ``search_document`` (those lexemes, without positions: ``document_expression``) answers it,
  through a GIN index on the dialogues: the page walks the sort's index and checks the row it
  reads anyway, and the count reads the matching dialogues, never the turns. (A table of
  documents of its own was measured 3-7x slower: every search then joins it to the
  dialogues.)
- **Anything else** (several words, which must meet in one turn, a phrase, an exclusion) is a
  semi-join on the turns, through the GIN index on each turn's text (migration 0003).

Elsewhere (SQLite): every word appears, case-insensitively, in the same turn.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from django.db import connection
from django.db.models import Exists, Func, QuerySet, Value

SEARCH_CONFIG = "english"
# The search document's text: the turns' texts, one per line.
TURN_SEPARATOR = "\n"


def turn_search_vector() -> Any:
    """Each turn's text as a tsvector: identical to the expression migration 0003 indexed, or
    the planner cannot use the index."""
    from django.contrib.postgres.search import SearchVector

    return SearchVector("text", config=SEARCH_CONFIG)


def document_expression(texts: Sequence[str]) -> Any:
    """A dialogue's search document from its turns' texts (PostgreSQL): every lexeme, without
    positions, so its size is the dialogue's vocabulary, not its length."""
    from django.contrib.postgres.search import SearchVector

    return Func(
        SearchVector(Value(TURN_SEPARATOR.join(texts)), config=SEARCH_CONFIG), function="strip"
    )


def fill_documents(*, dialogue_table: str, turn_table: str) -> None:
    """Set every stored dialogue's search document from its turns, in one statement: the same
    document as ``document_expression`` (PostgreSQL; for the migration that added the column,
    and the transcript benchmark's seeding)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE {dialogue_table} AS dialogue
            SET search_document = strip(to_tsvector(%s::regconfig, turns.document))
            FROM (
                SELECT dialogue_id, string_agg(text, %s ORDER BY index) AS document
                FROM {turn_table} GROUP BY dialogue_id
            ) AS turns
            WHERE dialogue.id = turns.dialogue_id
            """,
            [SEARCH_CONFIG, TURN_SEPARATOR],
        )


# One run of ASCII letters is one token of PostgreSQL's parser (an "asciiword"), and so at most
# one lexeme, whatever the configuration: no need to ask the database about the common search.
PLAIN_WORD = re.compile(r"\s*[A-Za-z]+\s*")


def is_one_lexeme(text: str) -> bool:
    """Whether PostgreSQL reads ``text`` as at most one lexeme: only its parser knows (``1e5x``
    is two, ``self-check`` three); one small query unless ``text`` is a plain word."""
    if PLAIN_WORD.fullmatch(text):
        return True
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT numnode(websearch_to_tsquery(%s::regconfig, %s))", [SEARCH_CONFIG, text]
        )
        (nodes,) = cursor.fetchone()
    return bool(nodes <= 1)


def searches_turns(text: str) -> bool:
    """Whether a search for ``text`` must look into each turn (several words, a phrase, ...;
    and on SQLite always): then counting all its matches reads every matching turn, so the list
    counts only to the end of its page (see ``pagination``)."""
    return bool(text) and (connection.vendor != "postgresql" or not is_one_lexeme(text))


def search(
    dialogues: QuerySet[Any],
    text: str,
    turns: QuerySet[Any],
    *,
    in_turns: bool | None = None,
) -> QuerySet[Any]:
    """``dialogues`` that have one turn matching ``text``; ``turns``: a dialogue's turns (with
    an ``OuterRef`` to the dialogue); ``in_turns``: ``searches_turns(text)``, when the caller
    has it already."""
    if connection.vendor != "postgresql":
        for word in text.split():
            turns = turns.filter(text__icontains=word.strip('"'))
        return dialogues.filter(Exists(turns))
    from django.contrib.postgres.search import SearchQuery

    query = SearchQuery(text, config=SEARCH_CONFIG, search_type="websearch")
    if not (searches_turns(text) if in_turns is None else in_turns):
        return dialogues.filter(search_document=query)
    return dialogues.filter(
        Exists(turns.annotate(document=turn_search_vector()).filter(document=query))
    )
