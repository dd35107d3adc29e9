"""Credentials, as both sides must treat them: which environment variables a model may name as
the holder of its API key, and how a URL is quoted in a message.

**The operator's key rule.** An ``openai`` model's ``api_key_env`` names the environment variable
whose value the worker sends, as a bearer token, to the model's URL. A researcher chooses that
URL, so an unchecked name would let them receive any variable of the worker (``SECRET_KEY``,
``POSTGRES_PASSWORD``). Only names the operator allowed may be used:

- names starting with ``DIALAB_MODEL_KEY_ENV_PREFIX`` (default ``DIALAB_MODEL_KEY_``), and
- the names listed in ``DIALAB_MODEL_KEY_ENV_ALLOWED`` (comma-separated; default
  ``OPENAI_API_KEY``, the backend's default name, a key meant for exactly this).

Either variable set to an empty value turns its part off. Dialab's own settings
(``NEVER_MODEL_KEYS``) are never allowed, whatever the rule says. The rule is read from the
environment of the process that asks: the web process refuses such a model (form, services, run
launch) and the worker refuses to read the variable at run time, so give the web server and the
workers the same two settings.

**URLs in messages.** ``safe_url`` drops what may hold a credential (``user:password@``, the
query, the fragment, also when percent-encoded) before a URL goes into an error or a page.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit, urlunsplit

KEY_ENV_PREFIX_VARIABLE = "DIALAB_MODEL_KEY_ENV_PREFIX"
KEY_ENV_ALLOWED_VARIABLE = "DIALAB_MODEL_KEY_ENV_ALLOWED"
DEFAULT_KEY_ENV_PREFIX = "DIALAB_MODEL_KEY_"
DEFAULT_KEY_ENV_ALLOWED = ("OPENAI_API_KEY",)
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Dialab's own configuration: never sent to a model's URL, even under a prefix or in the list
# (the rule's own two variables start with its default prefix).
NEVER_MODEL_KEYS = frozenset(
    {
        "SECRET_KEY",
        "DATABASE_URL",
        "CELERY_BROKER_URL",
        "CACHE_URL",
        "DIALAB_PASSWORD",
        "DIALAB_SECRET_KEY",
        "DIALAB_DATABASE_URL",
        "DIALAB_BROKER_URL",
        "DIALAB_CACHE_URL",
        "POSTGRES_PASSWORD",
        KEY_ENV_PREFIX_VARIABLE,
        KEY_ENV_ALLOWED_VARIABLE,
    }
)


@dataclass(frozen=True)
class KeyEnvRule:
    """The environment variables a model's ``api_key_env`` may name."""

    prefix: str
    allowed: tuple[str, ...]

    def allows(self, name: str) -> bool:
        if name in NEVER_MODEL_KEYS or not ENV_NAME.fullmatch(name):
            return False
        by_prefix = bool(self.prefix) and name.startswith(self.prefix) and name != self.prefix
        return by_prefix or name in self.allowed

    def describe(self) -> str:
        """The rule in words, for a message (it names no variable's value; no final stop)."""
        parts = []
        if self.prefix:
            parts.append(f"a name starting with {self.prefix} (e.g. {self.prefix}MY_PROVIDER)")
        if self.allowed:
            parts.append(f"one of {', '.join(self.allowed)}")
        allowed = " or ".join(parts) if parts else "none: this deployment allows no key variable"
        return (
            f"The variables a model may name are the operator's choice ({allowed}); set with "
            f"{KEY_ENV_PREFIX_VARIABLE} and {KEY_ENV_ALLOWED_VARIABLE} on the web server and "
            "the workers"
        )


def key_env_rule(environ: Mapping[str, str] = os.environ) -> KeyEnvRule:
    """The rule this process's environment sets; ValueError naming the variable when a value is
    not a variable's name (or names one of Dialab's own settings)."""
    prefix = environ.get(KEY_ENV_PREFIX_VARIABLE, DEFAULT_KEY_ENV_PREFIX).strip()
    if prefix and not ENV_NAME.fullmatch(prefix):
        raise ValueError(
            f"{KEY_ENV_PREFIX_VARIABLE} must be the start of a variable's name (letters, digits, "
            f"underscores), or empty for none; got {prefix!r}."
        )
    raw = environ.get(KEY_ENV_ALLOWED_VARIABLE)
    allowed = (
        DEFAULT_KEY_ENV_ALLOWED
        if raw is None
        else tuple(dict.fromkeys(name.strip() for name in raw.split(",") if name.strip()))
    )
    wrong = [name for name in allowed if not ENV_NAME.fullmatch(name)]
    if wrong:
        raise ValueError(
            f"{KEY_ENV_ALLOWED_VARIABLE} lists variables' names, comma-separated; "
            f"{', '.join(map(repr, wrong))} is not one."
        )
    own = sorted(set(allowed) & NEVER_MODEL_KEYS)
    if own:
        raise ValueError(
            f"{KEY_ENV_ALLOWED_VARIABLE} may not list Dialab's own settings ({', '.join(own)}): "
            "a model's key is sent to the model's URL."
        )
    return KeyEnvRule(prefix=prefix, allowed=allowed)


def key_env_problem(name: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """Why a model may not name the variable ``name`` for its key, or None (a message with no
    final stop). Never quotes ``name`` (it may be a key pasted in the wrong place)."""
    rule = key_env_rule(environ)
    if rule.allows(name):
        return None
    return (
        f"api_key_env names a variable this deployment does not allow for keys. {rule.describe()}"
    )


# "?" or "#" percent-encoded once, twice or three times (%3F, %253F, %25253F; %23, ...).
_ENCODED_QUERY_OR_FRAGMENT = re.compile(r"%(?:25){0,2}(?:3[Ff]|23)")
UNREADABLE_URL = "[unreadable URL]"
DECODE_ROUNDS = 3


def safe_url(url: str) -> str:
    """``url`` as it may be quoted in a message or kept: without ``user:password@``, query and
    fragment, also where they hide percent-encoded (``/v1%3Fapi_key%3D...``, up to three times
    over). Text with no ``scheme://`` is not a URL and comes back as it is; a URL that cannot be
    parsed comes back as ``[unreadable URL]``."""
    if "://" not in url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return UNREADABLE_URL
    netloc = parts.netloc.rpartition("@")[2]
    decoded = netloc
    for _ in range(DECODE_ROUNDS):
        decoded = unquote(decoded)
    if "@" in decoded:  # user%3Akey%40host: userinfo once decoded
        netloc = decoded.rpartition("@")[2]
    path = _ENCODED_QUERY_OR_FRAGMENT.split(parts.path, maxsplit=1)[0]
    return str(urlunsplit((parts.scheme, netloc, path, "", "")))
