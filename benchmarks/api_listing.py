"""Benchmark listing transcripts through the HTTP API: peak memory stays flat as the list grows.

    .venv/bin/python benchmarks/api_listing.py                           # SQLite (throwaway)
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dialab \\
        .venv/bin/python benchmarks/api_listing.py --sizes 10000 100000

Into a throwaway database (the same dialogues as ``benchmarks/export_dialogues.py``: 6 turns, a
turn label and a dialogue label each), a researcher's token walks every transcript through the
API in-process (Django's test client, the whole request path: middleware, token check,
throttle, the endpoint): ``GET /api/v1/dialogues`` page by page, 500 a page, walked as the
client's ``dialogues.iter`` walks (``after=`` the last id read; once collecting reference cycles
after each page, once not) and by page number (``page=``, the list page's paging; not
collecting, so its speed compares with the walk's that does not either), and
``GET /api/v1/dialogues/export.jsonl`` read chunk by chunk as it streams. The baseline,
measured in the same run, is the naive export (every dialogue with its turns and labels loaded
at once). Peak memory is tracemalloc's peak during a traced walk;
timings come from an untraced one. Headline figures print last, one ``name: value`` a line.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

import django

django.setup()

from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import setup_databases, teardown_databases  # noqa: E402
from export_dialogues import export_naive, measure, populate  # noqa: E402

from webapp.accounts.models import User  # noqa: E402
from webapp.api import tokens  # noqa: E402
from webapp.api.api import api  # noqa: E402

PER_PAGE = 500


def researcher_client() -> Client:
    user, _ = User.objects.get_or_create(
        username="bench-researcher", defaults={"role": "researcher"}
    )
    tokens.ApiToken.objects.filter(user=user).delete()
    text = tokens.issue_token(user=user, name="bench")[1]
    return Client(headers={"Authorization": f"Bearer {text}"}, HTTP_HOST="localhost")


def list_pages(client: Client, *, collect: bool, walk: bool = True) -> Callable[[], int]:
    """Every page in turn: walked (``after=``), or numbered (``page=``). With ``collect``,
    reference cycles are collected after each page, so that the peak is what listing holds;
    without, it also holds the cycles each request leaves (Django's bound form fields,
    querysets) until CPython's collector reaches them, which its schedule bounds, not the
    list's length."""

    def list_all() -> int:
        listed, page, after = 0, 1, 0
        while True:
            where = {"after": after} if walk else {"page": page}
            response = client.get("/api/v1/dialogues", {**where, "per_page": PER_PAGE})
            body = json.loads(response.content)
            del response
            if collect:
                gc.collect()
            listed += len(body["items"])
            if not body["has_next"]:
                return listed
            page, after = page + 1, body["next_after"]

    return list_all


def stream_export(client: Client) -> Callable[[], int]:
    def walk() -> int:
        response = client.get("/api/v1/dialogues/export.jsonl")
        assert response.status_code == 200, response.content
        lines = 0
        for chunk in response.streaming_content:
            lines += chunk.count(b"\n")
        return lines

    return walk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    sizes = sorted(parser.parse_args().sizes)
    databases = setup_databases(verbosity=0, interactive=False)
    (throttle,) = api.throttle  # type: ignore[misc]
    throttle.allow_request = lambda request: True  # hundreds of pages a minute, by design here
    peaks: dict[tuple[str, int], float] = {}
    speeds: dict[tuple[str, int], float] = {}
    try:
        print(f"database: {connection.vendor} · {PER_PAGE} a page")
        print(f"{'dialogues':>9} {'path':<26} {'wall s':>8} {'dialogues/s':>12} {'peak MiB':>9}")
        for size in sizes:
            populate(size)
            client = researcher_client()
            for name, function in (
                ("api list, walked", list_pages(client, collect=True)),
                ("api list, no gc", list_pages(client, collect=False)),
                ("api list, numbered, no gc", list_pages(client, collect=False, walk=False)),
                ("api export, streamed", stream_export(client)),
                ("naive baseline", export_naive),
            ):
                count, wall, peak = measure(function)
                assert count == size, (name, count, size)
                peaks[name, size] = peak
                speeds[name, size] = count / wall
                print(f"{count:>9} {name:<26} {wall:>8.2f} {count / wall:>12.0f} {peak:>9.1f}")
    finally:
        teardown_databases(databases, verbosity=0)
    small, large = sizes[0], sizes[-1]
    for name in ("api list, walked", "api list, no gc", "api export, streamed", "naive baseline"):
        key = name.replace(",", "").replace(" ", "_")
        print(
            f"{key}_peak_growth_{small}_to_{large}: {peaks[name, large] / peaks[name, small]:.2f}"
        )
    for size in sizes:
        walked = speeds["api list, no gc", size]
        numbered = speeds["api list, numbered, no gc", size]
        print(f"api_list_walked_over_numbered_speed_{size}: {walked / numbered:.2f}")


if __name__ == "__main__":
    main()
