"""No log line shows a secret: the redacting filter that settings.LOGGING puts on the handlers,
exercised through real loggers (httpx's own request line included)."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import httpx
import pytest
from django.conf import settings

from webapp.core.redaction import (
    REDACTED,
    SecretRedactingFilter,
    configured_secrets,
    install_secret_redaction,
    redact,
)

KEY = "s3cr3t-value-0123456789"


def redacting_handlers(logger: logging.Logger) -> list[logging.Handler]:
    return [
        handler
        for handler in logger.handlers
        if any(isinstance(each, SecretRedactingFilter) for each in handler.filters)
    ]


@pytest.fixture
def console() -> Iterator[io.StringIO]:
    """What the root handler configured by settings.LOGGING writes, for the test's duration."""
    handlers = redacting_handlers(logging.getLogger())
    assert handlers, "settings.LOGGING puts the redacting filter on the root handler"
    handler = handlers[0]
    assert isinstance(handler, logging.StreamHandler)
    buffer = io.StringIO()
    previous = handler.setStream(buffer)
    try:
        yield buffer
    finally:
        handler.setStream(previous)


@pytest.fixture
def httpx_logging() -> Iterator[None]:
    """httpx's logger as a fresh process has it (level unset, propagating, enabled): other
    libraries imported earlier in the test session (vLLM's logging set-up) may have quietened it."""
    logger = logging.getLogger("httpx")
    saved = (logger.level, logger.propagate, logger.disabled)
    logger.setLevel(logging.NOTSET)
    logger.propagate, logger.disabled = True, False
    try:
        yield
    finally:
        logger.setLevel(saved[0])
        logger.propagate, logger.disabled = saved[1], saved[2]


@pytest.mark.usefixtures("httpx_logging")
def test_httpx_request_line_shows_no_api_key(console: io.StringIO) -> None:
    """httpx logs every request's full URL, as a log argument, at INFO."""

    def ok(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={})

    with httpx.Client(transport=httpx.MockTransport(ok)) as client:
        client.post(f"http://127.0.0.1:8000/v1/?api_key={KEY}chat/completions")
    line = console.getvalue()
    assert "HTTP Request: POST http://127.0.0.1:8000/v1/?api_key=[redacted]" in line
    assert KEY not in line


def test_arguments_and_tracebacks_are_redacted(console: io.StringIO) -> None:
    logger = logging.getLogger("some.library")
    try:
        raise ConnectionError(f"cannot reach redis://:{KEY}@cache:6379/0")
    except ConnectionError:
        logger.exception("connecting to %s failed", f"postgres://dialab:{KEY}@db/dialab")
    logger.warning("headers: %r", {"Authorization": f"Bearer {KEY}", "X-Api-Key": KEY})
    logger.warning("retrying https://h/v1?token=%s&x=1 with password=%s", KEY, KEY)
    output = console.getvalue()
    assert KEY not in output
    assert "postgres://[redacted]@db/dialab" in output
    assert "redis://[redacted]@cache:6379/0" in output  # inside the traceback
    assert "Traceback (most recent call last)" in output
    assert "token=[redacted]&x=1" in output and "password=[redacted]" in output


def test_configured_secrets_are_redacted_wherever_they_appear(console: io.StringIO) -> None:
    assert len(settings.SECRET_KEY) >= 8
    logging.getLogger("django.request").error("the key was %s!", settings.SECRET_KEY)
    output = console.getvalue()
    assert settings.SECRET_KEY not in output
    assert f"the key was {REDACTED}!" in output


def test_a_record_whose_arguments_do_not_fit_is_kept_without_them(
    console: io.StringIO,
) -> None:
    logging.getLogger("some.library").warning("value %d", f"api_key={KEY}")
    output = console.getvalue()
    assert "value %d (log arguments not shown" in output
    assert KEY not in output


def test_the_secrets_known_to_the_process() -> None:
    environ = {
        "OPENAI_API_KEY": "sk-openai-0123456789",
        "HF_TOKEN": "hf-token-0123456789",
        "MY_LLM": "named-by-api-key-env",
        "DATABASE_URL": "postgres://dialab:db-password-123@db/dialab",
        "CELERY_BROKER_URL": "redis://:broker-password-1@redis:6379/0",
        "PATH": "/usr/local/bin:/usr/bin",
        "HOME": "/home/someone-long",
    }
    secrets = configured_secrets(environ)
    assert settings.SECRET_KEY in secrets
    for expected in (
        "sk-openai-0123456789",
        "hf-token-0123456789",
        "db-password-123",
        "broker-password-1",
    ):
        assert expected in secrets
    assert "/usr/local/bin:/usr/bin" not in secrets and "/home/someone-long" not in secrets
    assert "named-by-api-key-env" not in secrets  # not named like a key...


def test_dialab_redact_env_names_more_variables(settings) -> None:  # type: ignore[no-untyped-def]
    settings.DIALAB_REDACT_ENV = ["MY_LLM"]
    assert "named-by-api-key-env" in configured_secrets({"MY_LLM": "named-by-api-key-env"})


def test_a_filter_with_given_secrets_on_a_real_handler() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(SecretRedactingFilter(secrets=["the configured/one", "short"]))
    logger = logging.getLogger("dialab.test.redaction")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("a %s and a %s", "the configured/one", "short")
        logger.warning("in a URL: %s", "http://h/?q=the%20configured%2Fone")
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    # Literal values shorter than 8 characters are left alone (they would garble ordinary text).
    assert stream.getvalue().splitlines() == [
        "a [redacted] and a short",
        "in a URL: http://h/?q=[redacted]",
    ]


def test_ordinary_lines_are_left_alone() -> None:
    for line in (
        "prompt_tokens=12 completion_tokens=5 max_new_tokens=256",
        'params {"api_key_env": "OPENAI_API_KEY", "model": "house"}',
        "celery@host ready.",
        "POST http://127.0.0.1:8000/v1/chat/completions 200",
    ):
        assert redact(line) == line


def test_django_loggers_have_no_unfiltered_handlers() -> None:
    """Django's default logging gives "django" and "django.server" handlers of their own;
    settings.LOGGING replaces them so that runserver's request lines are filtered too."""
    # (pytest adds capturing handlers of its own, which are not Django's concern.)
    assert not [h for h in logging.getLogger("django").handlers if type(h) is logging.StreamHandler]
    server = logging.getLogger("django.server")
    streams = [h for h in server.handlers if type(h) is logging.StreamHandler]
    assert streams and streams == redacting_handlers(server)


def test_install_skips_loggers_that_are_absent() -> None:
    install_secret_redaction(None)
