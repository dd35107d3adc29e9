"""An import-linter contract type the built-in ones cannot express: "standard library only".

``models_gpu.spec`` is what the web side and the model side agree on, so it must import nothing
but itself and Python's standard library. A forbidden contract names what may not be imported;
this one names what may, so a third-party package added later is caught without updating a list.
Registered in pyproject.toml (``contract_types``); runs with ``lint-imports``.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from importlinter import Contract, ContractCheck, fields, output


class StdlibOnlyContract(Contract):
    """The source modules (and their descendants) import only each other and the standard
    library. Needs ``include_external_packages = true``, or imports of installed packages are
    not in the graph.

    Configuration options:
        - source_modules: the packages that must stay standard-library only.
    """

    source_modules = fields.ListField(subfield=fields.ModuleField())

    def check(self, graph: Any, verbose: bool) -> ContractCheck:
        violations: list[tuple[str, str, list[int]]] = []
        for source in self.source_modules:  # type: ignore[attr-defined]
            own = {source.name} | graph.find_descendants(source.name)
            for importer in sorted(own):
                for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                    if imported in own or imported.split(".")[0] in sys.stdlib_module_names:
                        continue
                    details = graph.get_import_details(importer=importer, imported=imported)
                    lines = sorted(detail["line_number"] for detail in details)
                    violations.append((importer, imported, lines))
        return ContractCheck(kept=not violations, metadata={"violations": violations})

    def render_broken_contract(self, check: ContractCheck) -> None:
        _print_violations(check)


# ``import a.b, c`` or ``from a.b import c, d``: the modules a line names (a name imported from
# a package may be one of its modules, so ``from django import http`` names ``django.http``).
_IMPORT_LINE = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import\s+\(?([\w\s,]*)|import\s+([\w\s.,]+))")


def _named_modules(line: str) -> set[str]:
    match = _IMPORT_LINE.match(line)
    if match is None:
        return set()
    package, names, modules = match.groups()
    if modules is not None:
        return {module.split(" as ")[0].strip() for module in modules.split(",")}
    names = [name.split(" as ")[0].strip() for name in (names or "").split(",")]
    return {package} | {f"{package}.{name}" for name in names if name}


class ForbiddenSubmodulesContract(Contract):
    """The source modules (and their descendants) never import the forbidden modules, which
    may be parts of installed packages (``django.http``): the built-in forbidden contract only
    knows an installed package as a whole, so this one reads the import lines themselves.
    Needs ``include_external_packages = true``.

    Configuration options:
        - source_modules: the packages that must not import them.
        - forbidden_modules: dotted names; each one's submodules are forbidden too.
    """

    source_modules = fields.ListField(subfield=fields.ModuleField())
    forbidden_modules = fields.ListField(subfield=fields.StringField())

    def check(self, graph: Any, verbose: bool) -> ContractCheck:
        forbidden = list(self.forbidden_modules)  # type: ignore[attr-defined]
        packages = {name.split(".")[0] for name in forbidden}
        violations: list[tuple[str, str, list[int]]] = []
        for source in self.source_modules:  # type: ignore[attr-defined]
            own = {source.name} | graph.find_descendants(source.name)
            for importer in sorted(own):
                for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                    if imported.split(".")[0] not in packages:
                        continue
                    details = graph.get_import_details(importer=importer, imported=imported)
                    for detail in details:
                        named = _named_modules(detail["line_contents"])
                        hit = next(
                            (
                                name
                                for name in forbidden
                                for module in named
                                if module == name or module.startswith(name + ".")
                            ),
                            None,
                        )
                        if hit is not None:
                            violations.append((importer, hit, [detail["line_number"]]))
        return ContractCheck(kept=not violations, metadata={"violations": violations})

    def render_broken_contract(self, check: ContractCheck) -> None:
        _print_violations(check)


def _print_violations(check: ContractCheck) -> None:
    """Each (importer, imported, line numbers) of a broken contract, a line each."""
    for importer, imported, lines in check.metadata["violations"]:
        where = ", ".join(f"l.{line}" for line in lines)
        output.print_error(f"{importer} -> {imported} ({where})", bold=False)
        output.new_line()
