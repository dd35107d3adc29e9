"""MkDocs hook: the reference pages that are generated from the code at build time.

Each page is built from the definition the program itself uses, so it cannot drift from it:

- ``reference/settings.md``: the ``Setting`` tuples of ``models_gpu.spec`` (backends, scripted
  policies, generator families, verifiers, offline and online training), the same tables the
  forms are built from, and the fields of ``ProtocolSpec`` and ``RunConfig`` (protocols and
  evaluation runs) with their bounds;
- ``reference/commands.md``: Dialab's own management commands, from their argparse parsers;
- ``reference/environment.md``: every environment variable ``webapp/settings.py`` reads through
  ``webapp.envconfig`` (its comments are the help), and those the model code reads;
- ``reference/import-contracts.md``: the import-linter contracts of ``pyproject.toml``.

The pages exist only in the build (``File.generated``); ``tests/docs/test_reference.py``
checks that they name every setting and every command.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import io
import os
import re
import sys
import tomllib
from collections.abc import Callable, Iterable
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# The Django apps whose management commands are Dialab's (not Django's or a library's).
DIALAB_APPS = ("webapp", "workers")


# --- Helpers -----------------------------------------------------------------------------------


def _cell(value: Any) -> str:
    """Text for one table cell: pipes escaped, newlines folded."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def _code(value: Any) -> str:
    text = _cell(value)
    return f"`{text}`" if text else ""


def _table(header: Iterable[str], rows: Iterable[Iterable[Any]]) -> list[str]:
    header = list(header)
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return [*out, ""]


def _number(value: float | None) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    return f"{value:,}".replace(",", "\u202f") if isinstance(value, int) else str(value)


# --- Settings: the Setting tuples of models_gpu.spec ---------------------------------------------


def setting_range(setting: Any) -> str:
    """The allowed values of a ``Setting`` in words."""
    if setting.kind == "choice":
        return ", ".join(f"`{choice}`" for choice in setting.choices)
    if setting.kind == "bool":
        return "true, false"
    parts = []
    if setting.low is not None or setting.high is not None:
        low = _number(setting.low)
        high = _number(setting.high)
        what = "length " if setting.kind == "str" else ""
        if setting.low is not None and setting.high is not None:
            left = "(" if setting.low_open else "["
            parts.append(f"{what}{left}{low}, {high}]")
        elif setting.low is not None:
            parts.append(f"{what}{'>' if setting.low_open else '≥'} {low}")
        else:
            parts.append(f"{what}≤ {high}")
    if setting.pattern:
        parts.append(setting.pattern_help or f"matches `{setting.pattern}`")
    if setting.optional:
        parts.append("or unset")
    return "; ".join(parts)


def setting_default(setting: Any) -> str:
    if setting.required:
        return "required"
    if setting.default is None:
        return "unset"
    if isinstance(setting.default, bool):
        return "`true`" if setting.default else "`false`"
    if isinstance(setting.default, str | list):
        import json

        return _code(json.dumps(setting.default))
    return _code(_number(setting.default))


def settings_table(settings: Iterable[Any]) -> list[str]:
    return _table(
        ["Setting", "Kind", "Range", "Default", "Help"],
        (
            [f"`{s.name}`", s.kind, setting_range(s), setting_default(s), _cell(s.help)]
            for s in settings
        ),
    )


def setting_groups() -> list[tuple[str, str, str, tuple[Any, ...]]]:
    """Every ``Setting`` tuple of ``models_gpu.spec``: (section, name, help, settings)."""
    from models_gpu.spec.backends import _DELAY, BACKENDS, SCRIPTED_POLICIES
    from models_gpu.spec.generators import FAMILIES
    from models_gpu.spec.online import ONLINE_SETTINGS
    from models_gpu.spec.training import TRAINING_SETTINGS
    from models_gpu.spec.verifiers import VERIFIERS

    groups: list[tuple[str, str, str, tuple[Any, ...]]] = []
    for name, backend in BACKENDS.items():
        if name == "scripted":
            groups.append(("Backends", name, backend.label, (_DELAY,)))
            continue
        groups.append(("Backends", name, backend.label, backend.params))
    for name, policy in SCRIPTED_POLICIES.items():
        groups.append(("Scripted policies", name, f"{policy.role}: {policy.help}", policy.params))
    for name, family in FAMILIES.items():
        help = f"{family.help} Difficulty: {family.difficulty}."
        groups.append(("Generator families", name, help, family.knobs))
    for name, verifier in VERIFIERS.items():
        help = verifier.label
        if verifier.reference_fields:
            fields = ", ".join(f"`{field}`" for field in verifier.reference_fields)
            help += f". The task's private reference holds {fields}."
        groups.append(("Verifiers", name, help, verifier.settings))
    groups.append(
        ("Training", "Offline training", "`models_gpu.spec.training.TRAINING_SETTINGS`",
         TRAINING_SETTINGS)
    )  # fmt: skip
    groups.append(
        ("Training", "Online training (multi-turn GRPO)",
         "`models_gpu.spec.online.ONLINE_SETTINGS`", ONLINE_SETTINGS)
    )  # fmt: skip
    return groups


def _docstring_fields(cls: type) -> dict[str, str]:
    """The ``name: text`` entries of a dataclass's docstring (continuation lines indented)."""
    found: dict[str, str] = {}
    names: list[str] = []
    for line in (cls.__doc__ or "").splitlines():
        match = re.match(r"^    ([\w ,/]+): (.*)$", line)
        if match:
            names = [name.strip() for name in re.split(r"[/,]", match[1])]
            for name in names:
                found[name] = match[2]
        elif line.startswith("        ") and names:
            for name in names:
                found[name] += " " + line.strip()
    return found


def _field_default(field: dataclasses.Field[Any]) -> str:
    if field.default is not dataclasses.MISSING:
        if isinstance(field.default, bool):
            return "`true`" if field.default else "`false`"
        return "unset" if field.default is None else _code(_number(field.default))
    if field.default_factory is not dataclasses.MISSING:
        return _code(field.default_factory())
    return "required"


def protocol_section() -> list[str]:
    from models_gpu.spec.protocol import (
        MAX_REGENERATIONS,
        MAX_TURNS,
        MODES,
        SELF_CORRECTION_STYLES,
        SETTING_MODES,
        TEMPLATE_MODES,
        ProtocolSpec,
    )
    from models_gpu.spec.templates import TEMPLATE_NAMES

    helps = _docstring_fields(ProtocolSpec)
    ranges = {
        "mode": ", ".join(f"`{mode}`" for mode in MODES),
        "max_turns": f"[1, {MAX_TURNS}]",
        "self_correction": ", ".join(f"`{style}`" for style in SELF_CORRECTION_STYLES),
        "regenerate_leaks": f"[0, {MAX_REGENERATIONS}]",
        "templates": ", ".join(f"`{name}`" for name in TEMPLATE_NAMES),
    }
    rows = []
    for field in dataclasses.fields(ProtocolSpec):
        if field.name in ("id", "name"):
            continue
        kind = str(field.type).replace("|", "or")
        modes = ", ".join(SETTING_MODES.get(field.name, ())) or "every mode"
        rows.append(
            [f"`{field.name}`", _cell(kind), ranges.get(field.name, ""), _field_default(field),
             modes, _cell(helps.get(field.name, ""))]
        )  # fmt: skip
    out = [
        "## Protocols",
        "",
        "`models_gpu.spec.protocol.ProtocolSpec`: what the protocol form edits and the engine "
        "runs. The modes: "
        + "; ".join(f"`{mode}` ({label})" for mode, label in MODES.items())
        + ".",
        "",
        *_table(["Setting", "Kind", "Range", "Default", "Read in modes", "Help"], rows),
        "Prompt templates read only by some modes: "
        + "; ".join(f"`{name}` ({', '.join(modes)})" for name, modes in TEMPLATE_MODES.items())
        + ".",
        "",
    ]
    return out


def evaluation_section() -> list[str]:
    from models_gpu.spec.run import MAX_BATCH_SIZE, MAX_SAMPLES_PER_TASK, MAX_SEED, RunConfig

    bounds = {
        "samples_per_task": f"[1, {_number(MAX_SAMPLES_PER_TASK)}]",
        "batch_size": f"[1, {_number(MAX_BATCH_SIZE)}]",
        "seed": f"[0, {_number(MAX_SEED)}]",
    }
    doc = " ".join(line.strip() for line in (RunConfig.__doc__ or "").splitlines())
    rows = [
        [f"`{field.name}`", _cell(str(field.type).replace("|", "or")),
         bounds.get(field.name, ""), _field_default(field)]
        for field in dataclasses.fields(RunConfig)
    ]  # fmt: skip
    return [
        "## Evaluation runs",
        "",
        f"`models_gpu.spec.run.RunConfig`, the frozen configuration a run plays: {doc}",
        "",
        *_table(["Field", "Kind", "Range", "Default"], rows),
    ]


def settings_page() -> str:
    out = [
        "# Settings",
        "",
        "Generated at build time from `models_gpu/spec`, the tables the forms are built from "
        "and checked against (`docs/hooks/reference.py`), so this page is the code's own. "
        "A value outside its range is refused with a message naming the setting; an unknown "
        "name is always an error.",
        "",
        *protocol_section(),
        *evaluation_section(),
    ]
    section = ""
    for group, name, help, settings in setting_groups():
        if group != section:
            out += [f"## {group}", ""]
            section = group
        out += [f"### `{name}`" if group != "Training" else f"### {name}", "", help, ""]
        out += settings_table(settings) if settings else ["No settings.", ""]
    return "\n".join(out)


# --- Management commands, from their parsers -----------------------------------------------------


def _setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()


def dialab_commands() -> dict[str, str]:
    """Dialab's own management commands: {name: app}."""
    _setup_django()
    from django.core.management import get_commands

    return {
        name: app
        for name, app in sorted(get_commands().items())
        if app.split(".")[0] in DIALAB_APPS
    }


def _command_parser(app: str, name: str) -> argparse.ArgumentParser:
    from django.core.management import load_command_class

    command = load_command_class(app, name)
    return command.create_parser("manage.py", name)


# The options every Django command takes; listed once at the top, not under each command.
_COMMON = {
    "help", "version", "verbosity", "settings", "pythonpath", "traceback", "no_color",
    "force_color", "skip_checks",
}  # fmt: skip


def commands_page() -> str:
    out = [
        "# Management commands",
        "",
        "Generated at build time from each command's argument parser "
        "(`docs/hooks/reference.py`). Run them as `.venv/bin/python manage.py NAME ...`; every "
        "one also takes Django's common options (`-v`, `--settings`, `--traceback`, ...).",
        "",
    ]
    for name, app in dialab_commands().items():
        parser = _command_parser(app, name)
        usage = io.StringIO()
        with redirect_stdout(usage):
            parser.print_usage()
        out += [f"## `{name}`", "", f"From `{app}`.", ""]
        if parser.description:
            out += [_cell(parser.description), ""]
        rows = []
        for action in parser._actions:
            if action.dest in _COMMON:
                continue
            names = ", ".join(action.option_strings) or action.dest
            default = action.default
            shown = "" if default in (None, argparse.SUPPRESS, False) else _code(default)
            choices = ", ".join(map(str, action.choices)) if action.choices else ""
            rows.append([f"`{names}`", _cell(action.help or ""), shown, _cell(choices)])
        if rows:
            out += _table(["Argument", "Help", "Default", "Choices"], rows)
    return "\n".join(out)


# --- Environment variables ------------------------------------------------------------------------

_READERS = {"env_str": "text", "env_bool": "true/false", "env_int": "integer",
            "env_list": "comma-separated list"}  # fmt: skip


def _comment_above(source_lines: list[str], lineno: int) -> str:
    """The comment block right above line ``lineno`` (1-based), or ""."""
    comments: list[str] = []
    index = lineno - 2
    while index >= 0 and source_lines[index].strip().startswith("#"):
        comments.insert(0, source_lines[index].strip().lstrip("#").strip())
        index -= 1
    return " ".join(comments)


def settings_environment() -> list[tuple[str, str, str, str]]:
    """(name, kind, default, help) for every variable webapp/settings.py reads."""
    path = ROOT / "webapp" / "settings.py"
    source = path.read_text()
    source_lines = source.splitlines()
    found: dict[str, tuple[str, str, str, str]] = {}
    statements = {
        node.lineno: node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.stmt)
    }
    calls = sorted(
        (node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)),
        key=lambda node: node.lineno,
    )
    for node in calls:
        if not isinstance(node.func, ast.Name):
            continue
        if node.func.id not in _READERS or not node.args:
            continue
        first = node.args[0]
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            continue
        default = ast.unparse(node.args[1]) if len(node.args) > 1 else ""
        kind = _READERS[node.func.id]
        for keyword in node.keywords:
            if keyword.arg == "minimum":
                kind += f", at least {ast.unparse(keyword.value)}"
        statement = max((line for line in statements if line <= node.lineno), default=node.lineno)
        help = _comment_above(source_lines, statement)
        found.setdefault(first.value, (first.value, kind, default, help))
    return list(found.values())


# Variables the model code reads (names defined as constants next to where they are read).
_MODEL_ENV_MODULES = (
    "models_gpu/sandbox/isolation.py",
    "models_gpu/spec/credentials.py",
    "models_gpu/devices.py",
)
_ENV_CONSTANT = re.compile(r'^(\w*(?:VARIABLE|_ENV))\s*=\s*"([A-Z][A-Z0-9_]+)"', re.MULTILINE)


def model_environment() -> list[tuple[str, str]]:
    """(name, module) for every environment variable the model code reads by a constant."""
    found = []
    for module in _MODEL_ENV_MODULES:
        for match in _ENV_CONSTANT.finditer((ROOT / module).read_text()):
            found.append((match[2], module))
    return found


def environment_page() -> str:
    settings_rows = [
        [f"`{name}`", kind, _code(default), _cell(help)]
        for name, kind, default, help in settings_environment()
    ]
    model_rows = [[f"`{name}`", f"`{module}`"] for name, module in model_environment()]
    return "\n".join(
        [
            "# Environment variables",
            "",
            "Generated at build time (`docs/hooks/reference.py`). [Configure Dialab]"
            "(../how-to/configure.md) says what each one is for; this page is the complete "
            "list, read from the code. A bad value stops start-up with a message naming the "
            "variable.",
            "",
            "## Read by the settings (`webapp/settings.py`)",
            "",
            "The default is the expression the settings module falls back to; the help is its "
            "comment there.",
            "",
            *_table(["Variable", "Kind", "Default", "Comment in the settings"], settings_rows),
            "## Read by the model code (web process and workers)",
            "",
            *_table(["Variable", "Read in"], model_rows),
            "`create_researcher` and `create_user` also read `DIALAB_PASSWORD`; the dataset "
            "imports honour `HF_DATASETS_OFFLINE` and `HF_HUB_OFFLINE`.",
            "",
        ]
    )


# --- Import contracts -----------------------------------------------------------------------------


def import_contracts() -> list[dict[str, Any]]:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        config = tomllib.load(handle)
    contracts: list[dict[str, Any]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def contracts_page() -> str:
    out = [
        "# Import contracts",
        "",
        "Generated at build time from `[tool.importlinter]` in `pyproject.toml`, the contracts "
        "`.venv/bin/lint-imports` checks in the test command. "
        "[Architecture](../explanation/architecture.md) explains why they are drawn where they "
        "are.",
        "",
    ]
    for contract in import_contracts():
        out += [f"## {contract['name']}", "", f"Type: `{contract['type']}`.", ""]
        for key, value in contract.items():
            if key in ("name", "type"):
                continue
            if key == "layers":
                out += ["", "Layers, top first (`|`: independent siblings; `:` siblings that "
                        "import each other):", ""]  # fmt: skip
                out += [f"{index}. `{layer}`" for index, layer in enumerate(value, 1)] + [""]
                continue
            shown = (
                ", ".join(f"`{item}`" for item in value)
                if isinstance(value, list)
                else (f"`{value}`")
            )
            out += [f"- {key.replace('_', ' ')}: {shown}"]
        out += [""]
    return "\n".join(out)


# --- MkDocs ---------------------------------------------------------------------------------------

PAGES: dict[str, Callable[[], str]] = {
    "reference/settings.md": settings_page,
    "reference/commands.md": commands_page,
    "reference/environment.md": environment_page,
    "reference/import-contracts.md": contracts_page,
}


def docker_page() -> str:
    """docker/README.md, kept beside the compose file it explains, as a page of the site (its
    links into docs/ rewritten for the page's place there)."""
    text = (ROOT / "docker" / "README.md").read_text()
    return text.replace("](../docs/", "](../")


# Pages that live elsewhere in the repository, published in the site as they are.
INCLUDED: dict[str, Callable[[], str]] = {"how-to/docker.md": docker_page}


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for path, build in {**PAGES, **INCLUDED}.items():
        files.append(File.generated(config, path, content=build()))
    return files
