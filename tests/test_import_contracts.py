"""The contract types of tests/import_contracts.py: "standard library only", which keeps
models_gpu.spec free of other packages, and "forbidden submodules", which keeps django.http out
of the workers."""

from __future__ import annotations

import grimp

from tests.import_contracts import ForbiddenSubmodulesContract, StdlibOnlyContract


def spec_graph(*imports: tuple[str, str]) -> grimp.ImportGraph:
    graph = grimp.ImportGraph()
    for module in ("models_gpu", "models_gpu.spec", "models_gpu.spec.run", "models_gpu.engine"):
        graph.add_module(module)
    graph.add_module("json", is_squashed=True)
    for importer, imported in imports:
        if imported not in graph.modules:
            graph.add_module(imported, is_squashed=True)
        graph.add_import(importer=importer, imported=imported, line_number=3, line_contents="")
    return graph


def check(graph: grimp.ImportGraph) -> list[tuple[str, str, list[int]]]:
    contract = StdlibOnlyContract("spec", {}, {"source_modules": ["models_gpu.spec"]})
    result = contract.check(graph, verbose=False)
    assert result.kept == (not result.metadata["violations"])
    return list(result.metadata["violations"])


def test_imports_of_its_own_modules_and_the_standard_library_are_kept() -> None:
    graph = spec_graph(
        ("models_gpu.spec.run", "models_gpu.spec"),
        ("models_gpu.spec.run", "json"),
        ("models_gpu.spec", "__future__"),
        # Other modules may import what they like: only the source is held to the rule.
        ("models_gpu.engine", "torch"),
    )
    assert check(graph) == []


def test_third_party_packages_and_the_rest_of_models_gpu_are_broken_imports() -> None:
    graph = spec_graph(
        ("models_gpu.spec.run", "pydantic"),
        ("models_gpu.spec", "models_gpu.engine"),
        ("models_gpu.spec.run", "django"),
    )
    assert check(graph) == [
        ("models_gpu.spec", "models_gpu.engine", [3]),
        ("models_gpu.spec.run", "django", [3]),
        ("models_gpu.spec.run", "pydantic", [3]),
    ]


def workers_graph(*lines: str) -> grimp.ImportGraph:
    """``workers.tasks`` importing django with each of ``lines``, numbered from 1."""
    graph = grimp.ImportGraph()
    for module in ("workers", "workers.tasks"):
        graph.add_module(module)
    graph.add_module("django", is_squashed=True)
    for number, line in enumerate(lines, start=1):
        graph.add_import(
            importer="workers.tasks", imported="django", line_number=number, line_contents=line
        )
    return graph


def test_a_forbidden_part_of_a_package_is_found_however_the_line_imports_it() -> None:
    contract = ForbiddenSubmodulesContract(
        "http", {}, {"source_modules": ["workers"], "forbidden_modules": ["django.http"]}
    )
    graph = workers_graph(
        "from django.db import transaction",
        "from django.http import QueryDict",
        "from django import http",
        "import django.http.request",
        "from django.conf import settings",
        "from django.httpx import nothing",  # a name that only starts alike
    )
    result = contract.check(graph, verbose=False)
    assert not result.kept
    assert result.metadata["violations"] == [
        ("workers.tasks", "django.http", [2]),
        ("workers.tasks", "django.http", [3]),
        ("workers.tasks", "django.http", [4]),
    ]
