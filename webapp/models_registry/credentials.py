"""Dialab never stores a credential in a model: these checks find one in a location or in the
generation parameters. The form shows their messages; the services refuse to save with them.

An endpoint URL takes no userinfo (``user:key@``), no query string and no fragment at all, keys or
not: the OpenAI client appends ``/chat/completions`` to the base URL's *path*, so a query would
not even reach the server as written (``/v1?x=1`` becomes ``/v1/?x=1chat/completions``), and a
fragment is never sent. Refusing every query is simpler than judging which names hide a key, and
loses nothing. Each rule is checked on the percent-decoded forms of a location too (decoded up to
three times over: ``/v1%3Fapi_key%3D...`` is a query), and a location still encoded after that is
refused. The key belongs in an environment variable on the worker, named by the model's
``api_key_env`` parameter (the openai backend reads OPENAI_API_KEY when none is named), among
those the operator allows (``models_gpu.spec.credentials``, checked with the backend's parameters).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from webapp.core.redaction import DECODE_ROUNDS, decoded_forms, redact

# Parameter names that would hold a secret, and values that look like one.
SECRET_PARAM = re.compile(r"(api[_-]?key|secret|token|password|authori[sz]ation|bearer)$", re.I)
SECRET_VALUE = re.compile(r"^(sk-|Bearer\s)", re.I)

WHERE_KEYS_GO = (
    "Dialab never stores API keys: put the key in an environment variable on the worker and "
    'name it in the parameters, {"api_key_env": "OPENAI_API_KEY"} (the default name).'
)


def location_credential_problem(location: str) -> str | None:
    """Why ``location`` cannot be stored, or None: it, or one of its percent-decoded forms, holds
    a credential or a URL's query or fragment. Never quotes the value it refuses."""
    forms = decoded_forms(location)
    if len(forms) > DECODE_ROUNDS and unquote(forms[-1]) != forms[-1]:
        return (
            f"This location is percent-encoded more than {DECODE_ROUNDS} times over, so what it "
            f"holds cannot be checked: give it as plain text. {WHERE_KEYS_GO}"
        )
    for depth, form in enumerate(forms):
        problem = _plain_location_problem(form)
        if problem:
            encoded = " (It is there once percent-decoded: %3F is ?, %23 is #, %40 is @.)"
            return problem + (encoded if depth else "")
    return None


def _plain_location_problem(location: str) -> str | None:
    if "://" not in location:
        # A path or a policy name: refused only if it holds what the log filter would hide.
        if redact(location) != location:
            return f"This location looks like it holds a key. {WHERE_KEYS_GO}"
        return None
    try:
        url = urlsplit(location)
    except ValueError:
        return None  # not a URL after all: the backend's own check says what is wrong
    if "@" in url.netloc:
        return f"Leave credentials out of the URL (the user:password@ part). {WHERE_KEYS_GO}"
    if "?" in location or "#" in location:
        names = [name for name, _ in parse_qsl(url.query + "&" + url.fragment)]
        looks_like_key = redact(location) != location or any(
            SECRET_PARAM.search(name) for name in names
        )
        lead = (
            "This URL carries what looks like a key in its query string or fragment. "
            if looks_like_key
            else ""
        )
        return (
            f"{lead}Give the endpoint's base URL alone, with no ?query or #fragment, e.g. "
            "http://127.0.0.1:8000/v1 (the client adds /chat/completions to its path, so a "
            f"query could not work). {WHERE_KEYS_GO}"
        )
    if redact(location) != location:
        return f"This URL looks like it holds a key. {WHERE_KEYS_GO}"
    return None


def secret_param_names(params: Mapping[str, Any]) -> list[str]:
    """Parameters named like a secret, or whose value looks like a key (``sk-...``)."""
    return sorted(
        key
        for key, value in params.items()
        if SECRET_PARAM.search(key)
        or (isinstance(value, str) and (SECRET_VALUE.match(value) or redact(value) != value))
    )


def secret_params_problem(params: Mapping[str, Any]) -> str | None:
    names = secret_param_names(params)
    return f"{', '.join(names)}: {WHERE_KEYS_GO}" if names else None


def credential_problems(*, location: str, generation_params: Mapping[str, Any]) -> dict[str, str]:
    """The credential problems of a model, by the field that holds them."""
    problems = {
        "location": location_credential_problem(location),
        "generation_params": secret_params_problem(generation_params),
    }
    return {field: problem for field, problem in problems.items() if problem}
