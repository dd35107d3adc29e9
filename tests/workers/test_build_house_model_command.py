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
    # Each figure says how it was measured.
    assert "held-out 1-2 digit sums and differences, answering greedily." in spec.description
    sampled = "Sampling at temperature 0.7, with the scripted teacher: 2-digit ones solved by turn"
    assert sampled in spec.description
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


def test_a_build_reports_its_progress_for_the_home_page_and_the_log(
    settings, tmp_path: Path, client, researcher
) -> None:  # type: ignore[no-untyped-def]
    """The demo runs the build in the background with its output in a log file: the log gets
    a line per tenth of the steps, and the home page reads the progress file it leaves."""
    settings.DATA_DIR = tmp_path
    printed = build("--force")  # StringIO is no terminal: tqdm draws nothing there
    assert "step     3/3  loss " in printed and "s left)" in printed

    from django.urls import reverse

    from webapp.views import house_build_progress_path

    report = json.loads(house_build_progress_path().read_text())
    assert (report["state"], report["step"], report["total"]) == ("done", 3, 3)
    assert report["loss"] > 0 and report["elapsed_seconds"] > 0

    client.force_login(researcher)
    poll = client.get(reverse("home"), headers={"HX-Request": "true", "HX-Target": "house-build"})
    assert poll.status_code == 286  # over: htmx stops polling
    assert "Built in" in poll.content.decode() and "3 steps" in poll.content.decode()


def test_a_failed_build_says_so_on_the_home_page(
    settings, tmp_path: Path, client, researcher
) -> None:  # type: ignore[no-untyped-def]
    from django.urls import reverse

    settings.DATA_DIR = tmp_path
    # A file where the build puts its directory: saving the checkpoint fails for real.
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / ".house.building").write_text("in the way")
    with pytest.raises(OSError):
        build()
    client.force_login(researcher)
    page = client.get(reverse("home")).content.decode()
    assert 'id="house-build"' in page and "The build failed at step 3 of 3" in page
    assert "hx-trigger" not in page.split('id="house-build"')[1].split("</section>")[0]
