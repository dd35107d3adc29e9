"""The partial plotly.js bundle: found under its content-hashed name with its precompressed
siblings, served compressed and cached as immutable, and missed loudly by the system check.

The first tests use the bundle scripts/setup.sh installed; the others build a bundle of their
own in a temporary vendor directory (whitenoise's own compressor writes its ``.gz``)."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path
from typing import Any

import brotli
import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import Client
from django.urls import reverse
from whitenoise.compress import Compressor

from tests.factories import TaskSetFactory
from tests.transcript_builders import make_run
from webapp.core.plotly_csp import style_sources
from webapp.core.staticfinders import (
    BUNDLE_NAME,
    PlotlyJsFinder,
    plotly_js_path,
    plotly_static_path,
)
from webapp.core.templatetags.dialab import plotly_js_url

FULL_BUNDLE_BYTES = 4_000_000  # plotly.min.js of the plotly package: about 4.8 MB
# WhiteNoise's "forever" for a file whose name carries its hash: ten years.
FOREVER = "max-age=315360000, public, immutable"


def body(response: Any) -> bytes:
    return b"".join(response.streaming_content)


def install_bundle(directory: Path, text: str) -> Path:
    """What setup does: the bundle named by its hash, then its compressed siblings."""
    data = text.encode()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"plotly-basic.{hashlib.sha256(data).hexdigest()[:12]}.min.js"
    path.write_bytes(data)
    Compressor(quiet=True).compress(str(path))
    return path


@pytest.fixture
def vendor(settings: Any, tmp_path: Path) -> Path:
    settings.DIALAB_VENDOR_DIR = tmp_path / "vendor"
    return Path(settings.DIALAB_VENDOR_DIR)


# --- the bundle setup installed ----------------------------------------------------------------


def test_setup_installed_one_partial_bundle_named_by_its_hash() -> None:
    path = plotly_js_path()
    assert path is not None, "run scripts/setup.sh"
    match = BUNDLE_NAME.match(path.name)
    assert match is not None
    data = path.read_bytes()
    assert match["hash"] == hashlib.sha256(data).hexdigest()[:12]
    assert b"plotly.js (basic - minified)" in data[:300]
    assert len(data) < FULL_BUNDLE_BYTES / 3
    gz = path.with_name(path.name + ".gz")
    assert gzip.decompress(gz.read_bytes()) == data
    assert PlotlyJsFinder().check() == []
    # Even the basic bundle writes its map library's stylesheet: the run page admits it.
    assert len(style_sources(data.decode())) == 2


def test_the_finders_find_the_bundle_and_its_compressed_siblings() -> None:
    path = plotly_js_path()
    assert path is not None
    name = plotly_static_path()
    assert name == f"vendor/{path.name}"
    assert finders.find(name) == str(path)
    assert finders.find(f"{name}.gz") == f"{path}.gz"
    listed = {f"{storage.prefix}/{found}" for found, storage in PlotlyJsFinder().list(None)}
    assert {name, f"{name}.gz"} <= listed
    assert finders.find("vendor/plotly.min.js") is None  # the full bundle is no longer served


@pytest.mark.django_db
def test_the_installed_bundle_is_served_compressed_and_immutable(client: Client) -> None:
    path = plotly_js_path()
    assert path is not None
    url = plotly_js_url()
    assert url == f"/static/vendor/{path.name}"
    response = client.get(url, HTTP_ACCEPT_ENCODING="gzip, deflate")
    assert response.status_code == 200
    assert response["Content-Encoding"] == "gzip"
    assert response["Cache-Control"] == FOREVER
    assert response["Vary"] == "Accept-Encoding"
    assert response["Content-Type"].startswith("text/javascript")
    sent = body(response)
    assert int(response["Content-Length"]) == len(sent) < FULL_BUNDLE_BYTES / 10
    assert gzip.decompress(sent) == path.read_bytes()
    assert client.get("/static/vendor/plotly.min.js").status_code == 404


@pytest.mark.django_db
def test_the_run_page_loads_the_hashed_bundle(researcher_client: Client) -> None:
    run = make_run("r", TaskSetFactory())
    page = researcher_client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert f'<script src="{plotly_js_url()}" defer></script>' in page
    assert "plotly.min.js" not in page


# --- a bundle of the test's own ----------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("autorefresh", [False, True], ids=["listed-at-start", "autorefresh"])
def test_a_bundle_is_served_by_its_hash_in_the_encoding_asked_for(
    settings: Any, vendor: Path, autorefresh: bool
) -> None:
    settings.WHITENOISE_AUTOREFRESH = autorefresh
    text = "/* plotly */" + "var trace = {type: 'scatter'};\n" * 2000
    path = install_bundle(vendor, text)
    client = Client()  # its WhiteNoise reads the settings above
    url = f"/static/vendor/{path.name}"
    assert plotly_js_url() == url

    compressed = client.get(url, HTTP_ACCEPT_ENCODING="gzip")
    assert compressed["Content-Encoding"] == "gzip"
    assert compressed["Cache-Control"] == FOREVER
    assert gzip.decompress(body(compressed)).decode() == text
    smallest = client.get(url, HTTP_ACCEPT_ENCODING="br;q=1.0, gzip;q=0.8")
    assert smallest["Content-Encoding"] == "br"  # whitenoise[brotli] wrote a .br too
    assert brotli.decompress(body(smallest)).decode() == text

    plain = client.get(url)  # no Accept-Encoding: the file itself
    assert "Content-Encoding" not in plain
    assert plain["Cache-Control"] == FOREVER
    assert body(plain).decode() == text

    # Any other name, the unhashed one included, is not this file.
    assert client.get("/static/vendor/plotly-basic.min.js").status_code == 404
    # Only the hashed bundle is immutable; the site's own files keep the short max-age.
    assert client.get("/static/dialab/charts.js")["Cache-Control"] != FOREVER


def test_the_system_check_says_when_the_bundle_is_not_installed(vendor: Path) -> None:
    assert plotly_js_path() is None
    errors = PlotlyJsFinder().check()
    assert [error.id for error in errors] == ["dialab.E001"]
    assert str(vendor) in errors[0].msg and "scripts/setup.sh" in str(errors[0].hint)
    with pytest.raises(SystemCheckError, match=r"(?s)plotly\.js bundle is not installed.*setup"):
        call_command("check")
    assert plotly_js_url() == "/static/vendor/plotly-basic.min.js"  # answers 404, no 500


def test_the_system_check_refuses_a_bundle_whose_name_is_not_its_hash(vendor: Path) -> None:
    path = install_bundle(vendor, "/* plotly */")
    path.write_text("/* edited after setup */")
    assert [error.id for error in PlotlyJsFinder().check()] == ["dialab.E003"]


def test_the_system_check_refuses_two_bundles(vendor: Path) -> None:
    install_bundle(vendor, "/* plotly 1 */")
    install_bundle(vendor, "/* plotly 2 */")
    assert plotly_js_path() is None
    assert [error.id for error in PlotlyJsFinder().check()] == ["dialab.E002"]
