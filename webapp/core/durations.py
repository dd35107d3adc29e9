"""Lengths of time as pages show them (defined once: the home page's build, the wait notes)."""

from __future__ import annotations


def duration(seconds: float) -> str:
    """A short, rounded length of time: ``45 s``, ``3 min``, ``1 h 5 min``."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"
