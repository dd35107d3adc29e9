"""Procedural task generators: seeded families with difficulty knobs (see ``registry``)."""

from __future__ import annotations

from models_gpu.generators.registry import GENERATOR_KNOBS, GENERATORS, generate, validate_knobs

__all__ = ["GENERATORS", "GENERATOR_KNOBS", "generate", "validate_knobs"]
