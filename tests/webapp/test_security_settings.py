"""The security settings of issue 28 fail loudly at start-up on a bad value: the operator's key
rule for models and the trusted proxy header of the login throttle."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"DIALAB_MODEL_KEY_ENV_ALLOWED": "OPENAI_API_KEY,SECRET_KEY"}, "Dialab's own settings"),
        ({"DIALAB_MODEL_KEY_ENV_PREFIX": "MY-KEYS"}, "DIALAB_MODEL_KEY_ENV_PREFIX must be"),
        ({"DIALAB_TRUSTED_PROXY_COUNT": "2"}, "DIALAB_TRUSTED_PROXY_HEADER is not"),
        ({"DIALAB_TRUSTED_PROXY_HEADER": "X Forwarded For"}, "must be a header's name"),
        (
            {"DIALAB_TRUSTED_PROXY_HEADER": "X-Forwarded-For", "DIALAB_TRUSTED_PROXY_COUNT": "0"},
            "DIALAB_TRUSTED_PROXY_COUNT must be at least 1",
        ),
    ],
)
def test_a_bad_value_stops_start_up(tmp_path: Path, environ: dict[str, str], message: str) -> None:
    env = {**os.environ, "DIALAB_DATA_DIR": str(tmp_path), **environ}
    env["DJANGO_SETTINGS_MODULE"] = "webapp.settings"
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and message in result.stderr, result.stderr
