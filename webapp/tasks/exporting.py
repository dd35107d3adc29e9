"""Export a task set as Dialab JSONL: one task per line with every field, in position order.

Importing the file back (format "dialab") gives an identical task set.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from webapp.tasks.imports.mapping import DIALAB_FIELDS
from webapp.tasks.models import TaskSet

EXPORT_CHUNK = 2000


def task_set_jsonl_lines(*, task_set: TaskSet) -> Iterator[str]:
    """Lines of the export, read from the database in chunks (memory flat in set size)."""
    rows = task_set.tasks.order_by("position", "id").values(*DIALAB_FIELDS)
    for row in rows.iterator(chunk_size=EXPORT_CHUNK):
        yield json.dumps(row, ensure_ascii=False) + "\n"


def task_set_export_filename(task_set: TaskSet) -> str:
    from django.utils.text import slugify

    return f"{slugify(task_set.name) or 'task-set'}-{task_set.pk}.jsonl"
