"""The operator's rule on which environment variable may hold a model's key, and URLs quoted in
messages without what may hold a credential (models_gpu.spec.credentials)."""

from __future__ import annotations

import pytest

from models_gpu.spec.backends import backend_problems, read_backend_params
from models_gpu.spec.credentials import (
    KEY_ENV_ALLOWED_VARIABLE,
    KEY_ENV_PREFIX_VARIABLE,
    key_env_problem,
    key_env_rule,
    safe_url,
)

DEFAULTS: dict[str, str] = {}


@pytest.mark.parametrize(
    "name", ["OPENAI_API_KEY", "DIALAB_MODEL_KEY_ACME", "DIALAB_MODEL_KEY_hosted_2"]
)
def test_by_default_the_documented_name_and_the_prefix_are_allowed(name: str) -> None:
    assert key_env_rule(DEFAULTS).allows(name)


@pytest.mark.parametrize(
    "name",
    [
        "SECRET_KEY",  # the report: a model at a local server received these
        "POSTGRES_PASSWORD",
        "DATABASE_URL",
        "HF_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "DIALAB_MODEL_KEY_",  # the prefix alone names no key
        KEY_ENV_ALLOWED_VARIABLE,  # the rule's own settings start with the prefix
        KEY_ENV_PREFIX_VARIABLE,
        "dialab_model_key_acme",  # variables' names are case-sensitive
    ],
)
def test_any_other_name_is_refused_by_default(name: str) -> None:
    assert not key_env_rule(DEFAULTS).allows(name)


def test_the_refusal_states_the_rule_and_never_quotes_the_name() -> None:
    message = key_env_problem("POSTGRES_PASSWORD", DEFAULTS)
    assert message is not None
    assert "starting with DIALAB_MODEL_KEY_" in message and "one of OPENAI_API_KEY" in message
    assert KEY_ENV_PREFIX_VARIABLE in message and KEY_ENV_ALLOWED_VARIABLE in message
    assert "POSTGRES_PASSWORD" not in message


def test_the_operator_sets_the_prefix_and_the_list() -> None:
    environ = {KEY_ENV_PREFIX_VARIABLE: "ACME_", KEY_ENV_ALLOWED_VARIABLE: "MY_LLM, OTHER_KEY"}
    rule = key_env_rule(environ)
    assert [rule.allows(name) for name in ("ACME_KEY", "MY_LLM", "OTHER_KEY")] == [True] * 3
    # The defaults are replaced, not extended.
    assert not rule.allows("OPENAI_API_KEY") and not rule.allows("DIALAB_MODEL_KEY_X")
    message = key_env_problem("SECRET_KEY", environ) or ""
    assert "starting with ACME_" in message and "one of MY_LLM, OTHER_KEY" in message


def test_empty_values_turn_each_part_off() -> None:
    environ = {KEY_ENV_PREFIX_VARIABLE: "", KEY_ENV_ALLOWED_VARIABLE: ""}
    assert not key_env_rule(environ).allows("OPENAI_API_KEY")
    assert "allows no key variable" in (key_env_problem("OPENAI_API_KEY", environ) or "")


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({KEY_ENV_PREFIX_VARIABLE: "MY-KEYS"}, KEY_ENV_PREFIX_VARIABLE),
        ({KEY_ENV_ALLOWED_VARIABLE: "OK_KEY,not a name"}, KEY_ENV_ALLOWED_VARIABLE),
        ({KEY_ENV_ALLOWED_VARIABLE: "OPENAI_API_KEY,SECRET_KEY"}, "Dialab's own settings"),
    ],
)
def test_a_bad_rule_is_refused(environ: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        key_env_rule(environ)


def test_backend_problems_and_reading_the_params_apply_the_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for variable in (KEY_ENV_PREFIX_VARIABLE, KEY_ENV_ALLOWED_VARIABLE):
        monkeypatch.delenv(variable, raising=False)
    url = "http://127.0.0.1:8000/v1"
    refused = {"model": "m", "api_key_env": "SECRET_KEY"}
    (problem,) = backend_problems("openai", url, refused)
    assert problem.field == "params" and "starting with DIALAB_MODEL_KEY_" in problem.message
    with pytest.raises(ValueError, match="does not allow"):
        read_backend_params("openai", url, refused)
    assert backend_problems("openai", url, {"model": "m"}) == []  # the default name
    assert (
        backend_problems("openai", url, {"model": "m", "api_key_env": "DIALAB_MODEL_KEY_A"}) == []
    )
    # The operator took the default name off the list: a model that names none is refused too.
    monkeypatch.setenv(KEY_ENV_ALLOWED_VARIABLE, "")
    assert backend_problems("openai", url, {"model": "m"})


@pytest.mark.parametrize(
    ("url", "safe"),
    [
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("https://h/my%20models/v1/", "https://h/my%20models/v1/"),
        ("http://u:sk-abc@h:8000/v1?api_key=sk-abc#t=1", "http://h:8000/v1"),
        ("http://127.0.0.1:8000/v1%3Fapi_key%3Dsk-abc", "http://127.0.0.1:8000/v1"),
        ("http://127.0.0.1:8000/v1%253Fapi_key%253Dsk-abc", "http://127.0.0.1:8000/v1"),
        ("http://h/v1%23token%3Dabc", "http://h/v1"),
        ("http://user%3Asecret%40host/v1", "http://host/v1"),
        ("http://[::1/v1?api_key=sk-abc", "[unreadable URL]"),
        ("/models/house", "/models/house"),  # not a URL
    ],
)
def test_safe_url_drops_userinfo_query_and_fragment(url: str, safe: str) -> None:
    assert safe_url(url) == safe
