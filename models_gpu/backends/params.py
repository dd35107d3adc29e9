"""Checking a backend's params: each value's type and range, with a message that names the
backend, the param and the allowed range, so a typo in a model's settings fails before a model
loads instead of quietly changing results."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

Default = TypeVar("Default", float, int, None)


def number_param(
    backend: str,
    params: Mapping[str, Any],
    name: str,
    default: Default,
    *,
    low: float = 0,
    low_open: bool = False,
    high: float | None = None,
) -> float | Default:
    """``params[name]`` as a float in [low, high] (or (low, high] when ``low_open``)."""
    if name not in params:
        return default
    value = params[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{backend} backend: {name} must be a number, got {value!r}")
    too_low = value <= low if low_open else value < low
    if too_low or (high is not None and value > high):
        bounds = f"{'(' if low_open else '['}{low}, {high if high is not None else 'inf'}]"
        raise ValueError(f"{backend} backend: {name} must lie in {bounds}, got {value!r}")
    return float(value)


def integer_param(
    backend: str, params: Mapping[str, Any], name: str, default: Default, *, low: int
) -> int | Default:
    """``params[name]`` as a whole number of at least ``low``."""
    if name not in params:
        return default
    value = params[name]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{backend} backend: {name} must be a whole number, got {value!r}")
    if value < low:
        raise ValueError(f"{backend} backend: {name} must be at least {low}, got {value}")
    return value
