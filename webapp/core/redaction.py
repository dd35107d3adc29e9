"""Secrets never reach a log line: ``redact`` rewrites them to ``[redacted]``, and
``SecretRedactingFilter`` applies it to every record a handler writes.

settings.LOGGING puts the filter on the root handlers; workers/log_redaction.py puts it on the
handlers Celery installs in their place. It sits on *handlers*, not loggers, because a logger's
filter only sees records logged to that very logger, while a handler's sees every record that
reaches it, whichever library (httpx, openai, celery, django) logged it.

What is rewritten: URL userinfo (``scheme://user:pass@``), ``name=value`` pairs whose name looks
like a key, token, secret, password or signature (query strings, fragments, cookies, keyword
arguments), such keys in JSON/dict text, ``Authorization`` headers and ``Bearer`` tokens, well
known API-key shapes (``sk-...``, ``hf_...``, ``ghp_...``), and the literal values of the secrets
this deployment is configured with (``configured_secrets``).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, unquote, urlsplit

REDACTED = "[redacted]"

# Literal values shorter than this are left alone: replacing every occurrence of a short word
# would garble ordinary log lines (a password "dialab" would blank out the app's own name). Such
# a value is still redacted where it leaks in the usual way, inside a URL's userinfo.
MIN_SECRET_LENGTH = 8

# A parameter name that holds a secret: it *ends* in one of these words, so ``api_key`` and
# ``X-Amz-Signature`` match while ``api_key_env`` (a variable's name) and ``max_tokens`` do not.
SECRET_NAME = (
    r"[\w.\-]*?(?:api[_-]?key|apikey|key|secret|token|passw(?:or)?d|pwd|passphrase|signature"
    r"|sig|credentials?|auth|authorization|session(?:id)?)"
)
_USERINFO = re.compile(r"(?P<lead>\b[a-z][a-z0-9+.\-]*://)(?P<value>[^\s/?#'\"<>]+)(?=@)", re.I)
_AUTH_HEADER = re.compile(
    r"(?P<lead>\b(?:proxy-)?authorization['\"]?\s*[:=]\s*['\"]?"
    r"(?:(?:bearer|basic|token|digest|apikey)\s+)?)(?P<value>[^\s'\",}]+)",
    re.I,
)
_KEY_HEADER = re.compile(
    r"(?P<lead>\b(?:x-)?(?:api-key|auth-token)['\"]?\s*:\s*['\"]?)(?P<value>[^\s'\",}]+)", re.I
)
_BEARER = re.compile(r"(?P<lead>\b[Bb]earer\s+)(?P<value>[A-Za-z0-9\-._~+/]{8,}=*)")
_ASSIGNMENT = re.compile(
    rf"(?P<lead>(?<![\w.\-])(?:{SECRET_NAME})=['\"]?)(?P<value>[^\s&#'\"<>,;()\[\]{{}}]+)", re.I
)
_QUOTED_KEY = re.compile(rf"(?P<lead>['\"]{SECRET_NAME}['\"]\s*:\s*['\"])(?P<value>[^'\"]+)", re.I)
# Random keys are long and hold digits: "sk-learn-baseline" in a checkpoint's name is no key.
_KEY_SHAPES = re.compile(
    r"\b(?:sk-(?=[A-Za-z_\-]*\d)[A-Za-z0-9_\-]{20,}|hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}|xox[abposr]-[A-Za-z0-9\-]{10,}|AKIA[0-9A-Z]{16})"
)
_PATTERNS = (_USERINFO, _AUTH_HEADER, _KEY_HEADER, _BEARER, _ASSIGNMENT, _QUOTED_KEY)

# Environment variables whose values are secrets by their name (OPENAI_API_KEY, HF_TOKEN,
# POSTGRES_PASSWORD, AWS_SECRET_ACCESS_KEY, ...). A model's api_key_env usually names one.
SECRET_ENV_NAME = re.compile(
    r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?)$", re.I
)
# Connection URLs whose password is a secret even though the variable's name does not say so.
URL_SETTINGS = ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL")


def _keep_lead(match: re.Match[str]) -> str:
    return match["lead"] + REDACTED


def redact(text: str, *, secrets: re.Pattern[str] | None = None) -> str:
    """``text`` with every secret it shows replaced by ``[redacted]``.

    ``secrets`` is a pattern of literal values (``secrets_pattern``), replaced first so that a
    configured key is hidden even where it appears with no telltale name around it.
    """
    if secrets is not None:
        text = secrets.sub(REDACTED, text)
    for pattern in _PATTERNS:
        text = pattern.sub(_keep_lead, text)
    return _KEY_SHAPES.sub(REDACTED, text)


def secrets_pattern(values: Iterable[str]) -> re.Pattern[str] | None:
    """One pattern for the given literal values (and their URL-encoded forms), longest first so
    a secret that contains another is replaced whole; None when no value is long enough."""
    forms = set()
    for value in values:
        if value and len(value) >= MIN_SECRET_LENGTH:
            forms.update({value, quote(value, safe=""), unquote(value)})
    forms = {form for form in forms if len(form) >= MIN_SECRET_LENGTH}
    if not forms:
        return None
    return re.compile("|".join(re.escape(form) for form in sorted(forms, key=len, reverse=True)))


def _url_password(url: str) -> str:
    try:
        return unquote(urlsplit(url).password or "")
    except ValueError:  # not a URL: nothing to take from it
        return ""


def configured_secrets(environ: Mapping[str, str] = os.environ) -> list[str]:
    """The literal secrets this process knows: SECRET_KEY, the passwords in the database, broker
    and cache URLs, every environment variable named like a key, token, secret or password, and
    those listed in DIALAB_REDACT_ENV (a model's api_key_env may name anything)."""
    from django.conf import settings

    values = [_url_password(environ.get(name, "")) for name in URL_SETTINGS]
    extra_names: set[str] = set()
    if settings.configured:
        values.append(str(getattr(settings, "SECRET_KEY", "") or ""))
        database = getattr(settings, "DATABASES", {}).get("default", {})
        values.append(str(database.get("PASSWORD") or ""))
        values += [_url_password(str(getattr(settings, name, "") or "")) for name in URL_SETTINGS]
        extra_names.update(getattr(settings, "DIALAB_REDACT_ENV", ()))
    values += [
        value
        for name, value in environ.items()
        if name in extra_names or SECRET_ENV_NAME.search(name)
    ]
    return [value for value in dict.fromkeys(values) if value]


class SecretRedactingFilter(logging.Filter):
    """Formats each record, redacts the text, and leaves the record holding only that text.

    The record's arguments are merged into its message first (``getMessage``), so a secret
    passed as an argument (httpx logs the URL as one) is caught as well as one in the message;
    tracebacks and stack traces are formatted and redacted the same way. Never drops a record.
    """

    def __init__(self, secrets: Iterable[str] | None = None) -> None:
        super().__init__()
        # Read once, when logging is configured: the environment of a running process is fixed.
        self.secrets = secrets_pattern(configured_secrets() if secrets is None else secrets)

    def redact(self, text: str) -> str:
        return redact(text, secrets=self.secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            # Arguments that do not fit the message: logging would print them raw in its error
            # report, so they are dropped here instead.
            message = f"{record.msg} (log arguments not shown: they did not fit the message)"
        record.msg, record.args = self.redact(message), ()
        if record.exc_info:
            if not record.exc_text:
                record.exc_text = _format_exception(record.exc_info)
            # Formatters reuse exc_text; without exc_info none can re-render the raw traceback.
            record.exc_info = None
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        return True


def _format_exception(exc_info: Any) -> str:
    try:
        return logging.Formatter().formatException(exc_info)
    except Exception:  # not an (type, value, traceback) triple: keep what it says
        return str(exc_info)


def install_secret_redaction(*loggers: logging.Logger | None) -> None:
    """Put a redacting filter on every handler of ``loggers`` that has none yet (for handlers
    configured outside settings.LOGGING, such as the Celery worker's)."""
    redacting: SecretRedactingFilter | None = None
    for logger in loggers:
        for handler in logger.handlers if logger is not None else ():
            if any(isinstance(each, SecretRedactingFilter) for each in handler.filters):
                continue
            redacting = redacting or SecretRedactingFilter()
            handler.addFilter(redacting)
