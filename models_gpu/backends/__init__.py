"""Backends behind one interface, ``models_gpu.types.Generator``, built by ``load_generator``.

Heavy libraries are imported inside each loader, so choosing ``scripted`` never imports torch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from models_gpu.spec.run import RoleSpec
from models_gpu.types import Generator


class UnknownBackend(ValueError):
    pass


def _load_scripted(spec: RoleSpec) -> Generator:
    from models_gpu.backends.scripted import load_scripted

    return load_scripted(spec)


def _load_transformers(spec: RoleSpec) -> Generator:
    from models_gpu.backends.transformers_backend import load_transformers

    return load_transformers(spec)


def _load_vllm(spec: RoleSpec) -> Generator:
    from models_gpu.backends.vllm_backend import load_vllm

    return load_vllm(spec)


def _load_openai(spec: RoleSpec) -> Generator:
    from models_gpu.backends.openai_backend import load_openai

    return load_openai(spec)


def _load_person(spec: RoleSpec) -> Generator:
    from models_gpu.backends.human import load_person

    return load_person(spec)


_LOADERS: Mapping[str, Callable[[RoleSpec], Generator]] = {
    "scripted": _load_scripted,
    "transformers": _load_transformers,
    "vllm": _load_vllm,
    "openai": _load_openai,
    "human": _load_person,
}
BACKENDS: tuple[str, ...] = tuple(_LOADERS)  # every backend of models_gpu.spec (tested)


def load_generator(spec: RoleSpec) -> Generator:
    loader = _LOADERS.get(spec.backend)
    if loader is None:
        raise UnknownBackend(
            f"backend {spec.backend!r} is unknown; available backends: {', '.join(BACKENDS)}"
        )
    return loader(spec)


__all__ = ["BACKENDS", "UnknownBackend", "load_generator"]
