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
this deployment is configured with (``configured_secrets``). Each of these is also found where it
hides percent-encoded (``/v1%3Fapi_key%3Dsk-...``, up to ``DECODE_ROUNDS`` times over): a word
that holds a secret once decoded is shown decoded, with the secret redacted.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from models_gpu.spec.credentials import UNREADABLE_URL, KeyEnvRule, key_env_rule, safe_url

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
# Percent-encoded secrets are looked for word by word (a run of characters up to a space, quote
# or angle bracket: a URL, a query string, a path), decoded at most this many times.
DECODE_ROUNDS = 3
_WORD = re.compile(r"[^\s'\"<>]+")
_LAYOUT = re.compile(r"[\s\x00-\x1f\x7f]")

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
    """``text`` with every secret it shows replaced by ``[redacted]``, percent-encoded or not.

    ``secrets`` is a pattern of literal values (``secrets_pattern``), replaced first so that a
    configured key is hidden even where it appears with no telltale name around it.
    """
    text = _redact_plain(text, secrets)
    if "%" not in text:
        return text
    return _WORD.sub(lambda word: _redact_encoded(word[0], secrets, DECODE_ROUNDS), text)


def _redact_plain(text: str, secrets: re.Pattern[str] | None) -> str:
    if secrets is not None:
        text = secrets.sub(REDACTED, text)
    for pattern in _PATTERNS:
        text = pattern.sub(_keep_lead, text)
    return _KEY_SHAPES.sub(REDACTED, text)


def decoded_forms(text: str, rounds: int = DECODE_ROUNDS) -> list[str]:
    """``text``, then it percent-decoded once, twice, ... (at most ``rounds`` times), stopping
    as soon as decoding changes nothing."""
    forms = [text]
    for _ in range(rounds):
        decoded = unquote(forms[-1])
        if decoded == forms[-1]:
            break
        forms.append(decoded)
    return forms


def _redact_encoded(word: str, secrets: re.Pattern[str] | None, rounds: int) -> str:
    """``word`` as it is when no decoded form of it shows a secret; else the first decoded form
    that does, redacted (what is still encoded in it checked the same way, within ``rounds``
    decodings in all), with any whitespace or control character decoding produced encoded again
    (a %0A must not start a forged log line)."""
    if "%" not in word:
        return word
    forms = decoded_forms(word, rounds)
    found = next(
        (
            (depth, redacted)
            for depth, form in enumerate(forms[1:], start=1)
            if (redacted := _redact_plain(form, secrets)) != form
        ),
        None,
    )
    if found is None:
        return word
    depth, redacted = found
    if depth < rounds:
        left = rounds - depth
        redacted = _WORD.sub(lambda inner: _redact_encoded(inner[0], secrets, left), redacted)
    return _LAYOUT.sub(lambda char: quote(char[0], safe=""), redacted)


def credential_free_location(location: str) -> str:
    """A model's ``location`` stored before credentials were refused, with them removed: a URL
    loses its ``user:password@``, query and fragment, percent-encoded or not (``safe_url``);
    what still shows a secret after that, or cannot be parsed, becomes empty. A location that
    holds none comes back unchanged. (The data migrations that clean old rows call it.)"""
    if safe_url(location) == location and redact(location) == location:
        return location
    cleaned = safe_url(location)
    if cleaned == UNREADABLE_URL or redact(cleaned) != cleaned:
        return ""
    return cleaned


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
    and cache URLs, every environment variable named like a key, token, secret or password, every
    one a model may name for its key (the operator's rule, ``key_env_rule``), and those listed in
    DIALAB_REDACT_ENV."""
    from django.conf import settings

    try:
        model_keys: KeyEnvRule | None = key_env_rule(environ)
    except ValueError:  # a bad rule stops start-up (settings); a log filter never fails for it
        model_keys = None

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
        if name in extra_names
        or SECRET_ENV_NAME.search(name)
        or (model_keys is not None and model_keys.allows(name))
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
