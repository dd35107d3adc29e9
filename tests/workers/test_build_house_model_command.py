"""``manage.py build_house_model``: builds into the data directory once, registers the model,
and is idempotent (a real, very short build: a few training steps)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from webapp.models_registry.models import ModelSpec

pytest.importorskip("torch")
pytest.importorskip("transformers")

pytestmark = pytest.mark.django_db


def build(*args: str) -> str:
    out = StringIO()
    call_command("build_house_model", "--steps", "3", "--eval-tasks", "2", *args, stdout=out)
    return out.getvalue()


def test_builds_registers_and_is_idempotent(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.DATA_DIR = tmp_path
    house = tmp_path / "models" / "house"

    printed = build()
    assert "Registered model 'house'" in printed
    spec = ModelSpec.objects.get(name="house")
    assert spec.backend == ModelSpec.Backend.TRANSFORMERS
    assert spec.location == str(house)
    assert spec.generation_params == {"temperature": 0.7, "max_new_tokens": 32}
    assert "house model" in spec.description and "arithmetic" in spec.description
    notes = json.loads((house / "dialab_house.json").read_text())
    assert notes["training"]["steps"] == 3
    assert (house / "config.json").is_file() and (house / "tokenizer.json").is_file()
    assert not (tmp_path / "models" / ".house.building").exists()
    weights = (house / "model.safetensors").stat().st_mtime_ns

    # Again: nothing is rebuilt, and a registration edited since is put back.
    ModelSpec.objects.filter(name="house").update(location="/elsewhere", generation_params={})
    printed = build()
    assert "already built" in printed and "Updated model 'house'" in printed
    assert (house / "model.safetensors").stat().st_mtime_ns == weights
    spec.refresh_from_db()
    assert spec.location == str(house) and spec.generation_params["max_new_tokens"] == 32
    assert ModelSpec.objects.filter(name="house").count() == 1

    # --force rebuilds, here with other settings.
    out = StringIO()
    call_command("build_house_model", "--force", "--steps", "2", "--eval-tasks", "2", stdout=out)
    assert json.loads((house / "dialab_house.json").read_text())["training"]["steps"] == 2
    assert ModelSpec.objects.filter(name="house").count() == 1


def test_bad_steps_are_refused(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.DATA_DIR = tmp_path
    with pytest.raises(CommandError, match="--steps must be at least 1"):
        call_command("build_house_model", "--steps", "0")
    assert not ModelSpec.objects.filter(name="house").exists()
