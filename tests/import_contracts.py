"""An import-linter contract type the built-in ones cannot express: "standard library only".

``models_gpu.spec`` is what the web side and the model side agree on, so it must import nothing
but itself and Python's standard library. A forbidden contract names what may not be imported;
this one names what may, so a third-party package added later is caught without updating a list.
Registered in pyproject.toml (``contract_types``); runs with ``lint-imports``.
"""

from __future__ import annotations

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
        for importer, imported, lines in check.metadata["violations"]:
            where = ", ".join(f"l.{line}" for line in lines)
            output.print_error(f"{importer} -> {imported} ({where})", bold=False)
            output.new_line()
