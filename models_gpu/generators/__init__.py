"""Procedural task families (``generate``); their knobs are described in ``models_gpu.spec``."""

from models_gpu.generators.registry import GENERATORS, generate

__all__ = ["GENERATORS", "generate"]
