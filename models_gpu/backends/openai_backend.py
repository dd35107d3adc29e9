"""The ``openai`` backend: any OpenAI-compatible chat-completions endpoint (``vllm serve``, a hosted
API), with bounded concurrency, retries with exponential backoff, and timeouts.

``RoleSpec.location`` is the base URL (``http://127.0.0.1:8000/v1``). The API key is never a
param: ``api_key_env`` names the environment variable that holds it on the worker, read at each
``generate`` call and kept nowhere else, so no repr, exception or log line of this module can show
it. Servers that check no key (a local ``vllm serve``) need no variable: a placeholder is sent.
Only a variable the operator allows may be named (``models_gpu.spec.credentials``): any other is
refused when the model loads and again before each call, and never read. The URL goes into
messages and reprs without userinfo, query or fragment (``safe_url``).

Params (any other key is refused by name):
    model            the model name the endpoint serves (required).
    api_key_env      NAME of the environment variable that holds the key (default OPENAI_API_KEY);
                     only names the operator's rule allows.
    max_concurrency  requests in flight at once (default 8).
    timeout_seconds  per attempt (default 120).
    max_retries      attempts after the first, for the failures below (default 3).
    backoff_seconds  wait before the first retry, doubled for each next one (default 1).
    temperature      default 0.7; top_p default 1.0.
    max_new_tokens   sent as max_tokens (default 256); a request's own ``max_new_tokens`` caps it.
Each request's seed, mixed with its turn (``turn_seed``), is sent as ``seed``; token counts come
from the response's ``usage``; ``latency_ms`` is the attempt that succeeded.

Retries are this module's, not the client's (the client's own are switched off) so that what is
retried is stated here: connection errors, timeouts, HTTP 408, 409, 429 and 5xx, each after
``backoff_seconds * 2 ** (attempt - 1)`` seconds (or the server's Retry-After, if shorter than
a minute). Anything else (a wrong key, an unknown model, a bad request) fails at once.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from models_gpu.backends.prompting import chat_messages, turn_seed
from models_gpu.spec.backends import read_backend_params
from models_gpu.spec.credentials import key_env_problem, safe_url
from models_gpu.spec.run import RoleSpec
from models_gpu.types import Generation, GenerationRequest

# Sent when the variable is unset: local servers started without --api-key accept anything.
PLACEHOLDER_API_KEY = "no-key"
RETRIED_STATUSES = frozenset({408, 409, 429})
MAX_BACKOFF_SECONDS = 60.0
# Hosted APIs echo part of a wrong key ("Incorrect API key provided: sk-ab***xyz").
_KEY_LIKE = re.compile(r"(?:\bsk-|\bBearer\s+)[A-Za-z0-9_\-*.]{3,}", re.IGNORECASE)


class OpenAIBackendError(RuntimeError):
    """A request that failed for good; its message never contains the API key."""


@dataclass(frozen=True)
class OpenAIOptions:
    model: str
    api_key_env: str
    max_concurrency: int
    timeout_seconds: float
    max_retries: int
    backoff_seconds: float
    temperature: float
    top_p: float
    max_new_tokens: int

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> OpenAIOptions:
        """Check ``params`` (``models_gpu.spec.backends``); an api_key_env that is not a
        variable's name is refused without echoing it (it may be a pasted key)."""
        return cls(**read_backend_params("openai", "", params))


class OpenAIGenerator:
    def __init__(self, base_url: str, options: OpenAIOptions) -> None:
        self.base_url = base_url
        self.options = options

    def __repr__(self) -> str:
        # Options hold only the variable's name; the key itself is never stored on the object.
        return f"OpenAIGenerator(base_url={safe_url(self.base_url)!r}, options={self.options!r})"

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """All requests concurrently (at most ``max_concurrency`` in flight); results in order."""
        if not requests:
            return []
        if not _in_event_loop():  # the usual case: a worker thread with no event loop
            return asyncio.run(self._generate_all(requests))
        # Called from inside an event loop (an async caller, a notebook): use a thread of its own.
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, self._generate_all(requests)).result()

    async def _generate_all(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        from openai import AsyncOpenAI

        # Checked again here, not only when the model loaded: options built by hand, or a rule
        # tightened since, must never make the worker read (let alone send) another variable.
        refused = key_env_problem(self.options.api_key_env)
        if refused:
            raise OpenAIBackendError(f"{self._where()}: {refused}")
        api_key = os.environ.get(self.options.api_key_env) or PLACEHOLDER_API_KEY
        semaphore = asyncio.Semaphore(self.options.max_concurrency)
        # One client per call: an async client belongs to the event loop it was made in.
        async with AsyncOpenAI(
            base_url=self.base_url,
            api_key=api_key,
            timeout=self.options.timeout_seconds,
            max_retries=0,
        ) as client:
            tasks = [
                asyncio.ensure_future(self._complete(client, semaphore, request, api_key))
                for request in requests
            ]
            try:
                return list(await asyncio.gather(*tasks))
            except BaseException:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise

    async def _complete(
        self, client: Any, semaphore: asyncio.Semaphore, request: GenerationRequest, api_key: str
    ) -> Generation:
        import openai

        attempts = 1 + self.options.max_retries
        failure = ""
        for attempt in range(1, attempts + 1):
            retry_after: float | None = None
            async with semaphore:
                started = time.perf_counter()
                try:
                    response = await client.chat.completions.create(
                        model=self.options.model,
                        messages=chat_messages(request),
                        temperature=self.options.temperature,
                        top_p=self.options.top_p,
                        max_tokens=min(self.options.max_new_tokens, request.max_new_tokens),
                        seed=turn_seed(request),
                    )
                except openai.APITimeoutError:
                    failure = f"timed out after {self.options.timeout_seconds:g} s"
                except openai.APIConnectionError as error:
                    failure = f"could not connect ({_cause(error)})"
                except openai.APIStatusError as error:
                    failure = f"HTTP {error.status_code}: {error.message}"
                    if not _retried(error.status_code):
                        # Raised outside the except block so the client's exception (which holds
                        # the request and its headers) is not chained onto ours.
                        break
                    retry_after = _retry_after(error)
                else:
                    return _generation(response, started)
            if attempt < attempts:
                await asyncio.sleep(self._backoff(attempt, retry_after))
        else:
            raise OpenAIBackendError(
                self._scrub(
                    f"{self._where()} failed after {attempts} attempt(s): {failure}", api_key
                )
            )
        hint = ""
        if failure.startswith(("HTTP 401", "HTTP 403")):
            hint = f" (check the API key in the environment variable {self.options.api_key_env})"
        raise OpenAIBackendError(self._scrub(f"{self._where()} refused: {failure}{hint}", api_key))

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None and 0 <= retry_after <= MAX_BACKOFF_SECONDS:
            return retry_after
        return float(min(self.options.backoff_seconds * 2 ** (attempt - 1), MAX_BACKOFF_SECONDS))

    def _where(self) -> str:
        return f"openai backend: model {self.options.model!r} at {safe_url(self.base_url)}"

    @staticmethod
    def _scrub(message: str, api_key: str) -> str:
        if api_key and api_key != PLACEHOLDER_API_KEY:
            message = message.replace(api_key, "[redacted]")
        return _KEY_LIKE.sub("[redacted]", message)


def load_openai(spec: RoleSpec) -> OpenAIGenerator:
    options = OpenAIOptions.from_params(spec.params)
    if not spec.location.startswith(("http://", "https://")):
        # Only a URL is quoted, and only its safe part: other text may be a pasted key.
        got = f"got {safe_url(spec.location)!r}" if "://" in spec.location else "got no URL"
        raise ValueError(
            "openai backend: location must be the endpoint's base URL, "
            f"e.g. http://127.0.0.1:8000/v1; {got}"
        )
    if safe_url(spec.location) != spec.location:
        # A configuration frozen before such URLs were refused: never sent anywhere.
        raise ValueError(
            f"openai backend: location {safe_url(spec.location)!r} carries a user:password@, "
            "?query or #fragment (perhaps percent-encoded): give the endpoint's base URL alone, "
            "and the key in the environment variable named by api_key_env"
        )
    try:
        import openai  # noqa: F401
    except ImportError as error:
        raise ImportError(
            "the openai backend needs the openai package: pip install openai"
        ) from error
    return OpenAIGenerator(spec.location.rstrip("/"), options)


def _in_event_loop() -> bool:
    # Answered outside any except block, so errors raised later chain onto nothing.
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _generation(response: Any, started: float) -> Generation:
    usage = response.usage
    return Generation(
        text=response.choices[0].message.content or "",
        prompt_tokens=usage.prompt_tokens if usage else 0,
        completion_tokens=usage.completion_tokens if usage else 0,
        latency_ms=(time.perf_counter() - started) * 1000,
    )


def _retried(status: int) -> bool:
    return status in RETRIED_STATUSES or status >= 500


def _retry_after(error: Any) -> float | None:
    value = error.response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:  # an HTTP date: fall back to our own backoff
        return None


def _cause(error: BaseException) -> str:
    cause = error.__cause__ or error.__context__
    return f"{type(cause).__name__}: {cause}" if cause else str(error)
