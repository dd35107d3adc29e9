"""A key hidden by percent-encoding (``/v1%3Fapi_key%3Dsk-...``, once or more) is redacted like a
plain one: in log lines, and on the pages that show a stored location or a run's error."""

from __future__ import annotations

import io
import logging

import pytest
from django.urls import reverse

from tests.factories import frozen_run
from webapp.core.redaction import SecretRedactingFilter, redact
from webapp.models_registry.models import ModelSpec

KEY = "sk-abc123def456ghi789jkl0"
ENCODED_URL = f"http://127.0.0.1:8000/v1%3Fapi_key%3D{KEY}"


@pytest.mark.parametrize(
    "text",
    [
        ENCODED_URL,
        f"http://127.0.0.1:8000/v1%253Fapi_key%253D{KEY}",  # encoded twice
        "http://127.0.0.1:8000/v1%25253Fapi_key%25253Dnot-key-shaped-but-named",  # three times
        f"GET /healthz?next=%2Fv1%3Ftoken%3D{KEY} HTTP/1.1",
        f"http://user%3A{KEY}%40host/v1",
        "see https://h/v1%3Fpassword%3Dhunter2-long-enough for details",
        f"key %73%6B%2D{KEY[3:]}",  # the key's own letters encoded
    ],
)
def test_encoded_secrets_are_redacted(text: str) -> None:
    shown = redact(text)
    assert "[redacted]" in shown
    for secret in (KEY, KEY[3:], "not-key-shaped", "hunter2"):
        assert secret not in shown


def test_the_decoded_word_is_shown_with_the_secret_redacted() -> None:
    assert redact(f"at {ENCODED_URL} refused") == (
        "at http://127.0.0.1:8000/v1?api_key=[redacted] refused"
    )


@pytest.mark.parametrize(
    "text", ["http://h/my%20models/v1", "100% done", "a%2Fb%3Fc%3Dd", "%E2%9C%93 ok"]
)
def test_encoded_text_without_a_secret_is_left_as_it_is(text: str) -> None:
    assert redact(text) == text


def test_decoding_never_forges_a_log_line() -> None:
    shown = redact("GET /x%3Ftoken%3Dabcdefgh%0A[INFO]%20forged%20line")
    assert "\n" not in shown and "[redacted]" in shown and "abcdefgh" not in shown


def test_the_log_filter_redacts_encoded_keys() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(SecretRedactingFilter(secrets=[]))
    logger = logging.getLogger("tests.redaction_encoded")
    logger.addHandler(handler)
    try:
        logger.warning("model at %s failed", ENCODED_URL)
    finally:
        logger.removeHandler(handler)
    assert KEY not in stream.getvalue()
    assert "v1?api_key=[redacted]" in stream.getvalue()


def test_a_literal_configured_secret_is_found_encoded_too() -> None:
    redacting = SecretRedactingFilter(secrets=["plain-password-value"])
    assert redacting.redact("dsn=x%253A%2570lain-password-value") == "dsn=x:[redacted]"


@pytest.mark.django_db
def test_models_and_run_pages_show_no_encoded_key(researcher_client) -> None:  # type: ignore[no-untyped-def]
    # Written straight through the ORM, as rows saved before encoded keys were refused.
    model = ModelSpec.objects.create(
        name="legacy", backend="openai", location=ENCODED_URL, generation_params={"model": "m"}
    )
    run = frozen_run(
        student=model, status="failed", error=f"OpenAIBackendError: model 'm' at {ENCODED_URL}"
    )
    for url in (reverse("model_list"), reverse("run_detail", args=[run.pk])):
        page = researcher_client.get(url).content.decode()
        assert KEY not in page, url
        assert "api_key=[redacted]" in page, url


def test_every_variable_a_model_may_name_for_its_key_is_a_secret_to_redact() -> None:
    """DIALAB_MODEL_KEY_ACME is named like no key, yet the rule makes it one."""
    from webapp.core.redaction import configured_secrets

    environ = {"DIALAB_MODEL_KEY_ACME": "plain-value-0123", "MY_SETTING": "not-a-secret-0"}
    assert "plain-value-0123" in configured_secrets(environ)
    assert "not-a-secret-0" not in configured_secrets(environ)
    custom = {**environ, "DIALAB_MODEL_KEY_ENV_ALLOWED": "MY_SETTING"}
    assert "not-a-secret-0" in configured_secrets(custom)
