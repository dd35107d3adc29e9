"""Backends behind one interface, ``models_gpu.types.Generator``, built by ``load_generator``.

Heavy libraries are imported inside each loader, so choosing ``scripted`` never imports torch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from models_gpu.types import Generator, RoleSpec


class UnknownBackend(ValueError):
    pass


def _load_scripted(spec: RoleSpec) -> Generator:
    from models_gpu.backends.scripted import load_scripted

    return load_scripted(spec)


# transformers, vllm and openai land here, each with a loader that imports its library lazily.
_LOADERS: Mapping[str, Callable[[RoleSpec], Generator]] = {
    "scripted": _load_scripted,
}
BACKENDS: tuple[str, ...] = tuple(_LOADERS)
PLANNED_BACKENDS: tuple[str, ...] = ("transformers", "vllm", "openai", "human")


def load_generator(spec: RoleSpec) -> Generator:
    loader = _LOADERS.get(spec.backend)
    if loader is None:
        status = "is not implemented yet" if spec.backend in PLANNED_BACKENDS else "is unknown"
        raise UnknownBackend(
            f"backend {spec.backend!r} {status}; available backends: {', '.join(BACKENDS)}"
        )
    return loader(spec)


__all__ = ["BACKENDS", "PLANNED_BACKENDS", "UnknownBackend", "load_generator"]
