"""The "standard library only" contract that keeps models_gpu.spec free of other packages."""

from __future__ import annotations

import grimp

from tests.import_contracts import StdlibOnlyContract


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
