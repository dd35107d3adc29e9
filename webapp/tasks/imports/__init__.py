"""Import tasks into a new task set: streaming readers, a field mapping, validation, one write.

Every source becomes a stream of ``(number, record)`` pairs (a JSONL or CSV line number, a JSON
item number, a dataset row number) read a little at a time, so memory stays flat in file size.
A :class:`~webapp.tasks.imports.mapping.FieldMapping` turns each record into the fields of a
:class:`~webapp.tasks.models.Task`, and names the line and the field of the first problem it
finds. The tasks are written in ONE transaction: an import commits all its tasks or none.

The modules, from the bytes to the pages:

- ``errors``: :class:`TaskImportError`, the problem worded for the person who supplied the file;
- ``readers``: file formats (JSONL, JSON, CSV) -> records, within the bounds of
  :mod:`webapp.tasks.bounds`;
- ``mapping``: record -> :class:`Task`: the field mapping, value conversion and validation, and
  Dialab's own format;
- ``sources``: where records come from (an upload or a path, HumanEval, a Hugging Face dataset,
  what a :class:`TaskImport` names) and how each becomes a task;
- ``preview``: the mapping step: a source's columns, first records and a guessed mapping;
- ``services``: the writes: the all-or-nothing import, and a TaskImport's life (create, confirm
  the mapping, run it in a worker);
- ``claims``: which worker runs an import, and taking over one whose worker died;
- ``forms``, ``views``, ``urls``: the import pages and the JSONL export;
- ``upload_handlers``: stops storing an upload past the size limit.

The models stay in :mod:`webapp.tasks.models`.
"""
