"""The one error an import reports to the person who supplied its source."""


class TaskImportError(ValueError):
    """A problem with the input, worded for the person who supplied it (line and field)."""
