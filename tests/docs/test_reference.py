"""The documentation's generated reference (docs/hooks/reference.py) names everything it should.

Each test finds what must be documented by its own means (every ``Setting`` reachable from the
modules of ``models_gpu.spec``, the command files on disk, the environment reads of the settings
module), so a generator that dropped a table, a setting or a command fails here.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import pkgutil
import re
import sys
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import models_gpu.spec
from models_gpu.spec.settings import Setting

ROOT = Path(__file__).resolve().parents[2]


def _load_hook() -> ModuleType:
    path = ROOT / "docs" / "hooks" / "reference.py"
    spec = importlib.util.spec_from_file_location("dialab_docs_reference", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


reference = _load_hook()


def _settings_in(value: Any, seen: set[int]) -> Iterator[Setting]:
    """Every Setting inside ``value``: tuples, mappings and dataclasses, recursively."""
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, Setting):
        yield value
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _settings_in(item, seen)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _settings_in(item, seen)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from _settings_in(getattr(value, field.name), seen)


def every_spec_setting() -> list[tuple[str, Setting]]:
    """(module.attribute, setting) for every Setting that a module of models_gpu.spec holds."""
    found = []
    for info in pkgutil.iter_modules(models_gpu.spec.__path__):
        module = importlib.import_module(f"models_gpu.spec.{info.name}")
        for name, value in vars(module).items():
            if isinstance(value, ModuleType | type):
                continue
            for setting in _settings_in(value, set()):
                found.append((f"{info.name}.{name}", setting))
    return found


def test_the_settings_page_names_every_setting_of_every_tuple() -> None:
    page = reference.settings_page()
    settings = every_spec_setting()
    owners = {owner.split(".")[0] for owner, _ in settings}
    # The tables the forms are built from: none may go missing from the search above either.
    assert {"backends", "generators", "verifiers", "training", "online"} <= owners
    for owner, setting in settings:
        assert f"`{setting.name}`" in page, f"{owner}: {setting.name} is not documented"
        assert reference._cell(setting.help) in page, f"{owner}: {setting.name}'s help"


@pytest.mark.parametrize(
    ("module", "mapping"),
    [
        ("backends", "BACKENDS"),
        ("backends", "SCRIPTED_POLICIES"),
        ("generators", "FAMILIES"),
        ("verifiers", "VERIFIERS"),
    ],
)
def test_the_settings_page_has_a_section_per_backend_family_and_verifier(
    module: str, mapping: str
) -> None:
    page = reference.settings_page()
    for name in getattr(importlib.import_module(f"models_gpu.spec.{module}"), mapping):
        assert f"### `{name}`" in page


def test_the_settings_page_covers_protocols_and_evaluation_runs() -> None:
    from models_gpu.spec.protocol import ProtocolSpec
    from models_gpu.spec.run import RunConfig

    page = reference.settings_page()
    for cls in (ProtocolSpec, RunConfig):
        for field in dataclasses.fields(cls):
            if field.name not in ("id", "name"):
                assert f"| `{field.name}` |" in page, f"{cls.__name__}.{field.name}"
    assert "| `max_turns` | int | [1, 50] |" in page


def _command_files() -> dict[str, Path]:
    files = [
        *ROOT.glob("webapp/*/management/commands/*.py"),
        *ROOT.glob("workers/management/commands/*.py"),
    ]
    return {path.stem: path for path in files if not path.stem.startswith("_")}


def test_the_commands_page_names_every_dialab_command_and_its_options() -> None:
    page = reference.commands_page()
    commands = _command_files()
    assert {"create_researcher", "import_tasks", "sml_miniature"} <= set(commands)
    assert set(reference.dialab_commands()) == set(commands)
    for name in commands:
        assert f"## `{name}`" in page, name
        parser = reference._command_parser(reference.dialab_commands()[name], name)
        for action in parser._actions:
            if action.dest not in reference._COMMON:
                for option in action.option_strings or [action.dest]:
                    assert option in page, f"{name} {option}"
    # Django's own commands are not Dialab's.
    assert "## `migrate`" not in page


def _settings_environment_reads() -> set[str]:
    source = (ROOT / "webapp" / "settings.py").read_text()
    return set(re.findall(r'env_(?:str|bool|int|list)\(\s*"([A-Z0-9_]+)"', source))


def test_the_environment_page_names_every_variable_the_settings_read() -> None:
    page = reference.environment_page()
    names = _settings_environment_reads()
    assert {"DATABASE_URL", "DIALAB_DATA_DIR", "CELERY_BROKER_URL"} <= names
    for name in names:
        assert f"| `{name}` |" in page, name
    for name in ("DIALAB_SANDBOX", "DIALAB_SANDBOX_PYTHON", "DIALAB_SANDBOX_PACKAGES",
                 "DIALAB_MODEL_KEY_ENV_PREFIX", "DIALAB_MODEL_KEY_ENV_ALLOWED",
                 "DIALAB_TRAINING_THREADS"):  # fmt: skip
        assert f"| `{name}` |" in page, name


def test_the_configuration_guide_explains_every_variable_the_settings_read() -> None:
    """The hand-written table of docs/how-to/configure.md keeps up with the settings."""
    guide = (ROOT / "docs" / "how-to" / "configure.md").read_text()
    for name in _settings_environment_reads():
        assert f"`{name}`" in guide, name


def test_the_contracts_page_lists_every_import_contract_and_layer() -> None:
    page = reference.contracts_page()
    with (ROOT / "pyproject.toml").open("rb") as handle:
        contracts = tomllib.load(handle)["tool"]["importlinter"]["contracts"]
    for contract in contracts:
        assert f"## {contract['name']}" in page
        for layer in contract.get("layers", []):
            assert f"`{layer}`" in page
