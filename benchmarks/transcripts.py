"""Benchmark reading transcripts at scale: 100,000 dialogues and 1,000,000 turns in PostgreSQL.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dialab \
        .venv/bin/python benchmarks/transcripts.py

It creates a throwaway database next to the one DATABASE_URL names, migrates it, fills it with
COPY (10 runs x 10,000 dialogues x 10 turns), starts gunicorn on loopback, and loads it from a
second process: 20 concurrent clients, each logged in, requesting pages for a fixed time. It
prints latency percentiles per page and, as the baseline measured in the same run under the same
load, /healthz (one trivial query). Label saves are measured when the labelling endpoint exists
(``--label-url``). SQL queries per page are counted in-process on the same data.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RUNS, DIALOGUES_PER_RUN, TURNS_PER_DIALOGUE = 10, 10_000, 10
WORDS = [
    "carry", "column", "digit", "answer", "check", "again", "close", "sum", "product",
    "remainder", "wrong", "right", "higher", "lower", "step", "think", "count", "total",
    "error", "look", "first", "second", "last", "try", "nearly", "exactly",
]  # fmt: skip


def bench_url(base: str) -> str:
    parts = urlsplit(base)
    return urlunsplit(parts._replace(path="/dialab_bench_transcripts"))


def recreate_database(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    admin = urlunsplit(parts._replace(path="/postgres"))
    name = parts.path.lstrip("/")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')


def drop_database(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{parts.path.lstrip("/")}" WITH (FORCE)')


# Words that few turns contain, as in real searches for a specific mistake or idea.
RARE_WORDS = {"parity": 0.01, "telescoping": 0.001}


def sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(6, 16))]
    words += [word for word, share in RARE_WORDS.items() if rng.random() < share]
    return " ".join(words).capitalize() + "."


def seed(dialogues_per_run: int) -> dict[str, object]:
    """Fill the database with COPY; returns ids the load needs."""
    from django.contrib.sessions.backends.db import SessionStore
    from django.db import connection

    from webapp.accounts.models import User
    from webapp.models_registry.models import ModelSpec
    from webapp.runs.models import Protocol, Run
    from webapp.tasks.models import Task, TaskSet

    rng = random.Random(2026)
    user = User.objects.create_user("bench", password="bench-password-1", role="researcher")
    task_set = TaskSet.objects.create(name="bench tasks")
    Task.objects.bulk_create(
        Task(task_set=task_set, position=i, prompt=f"What is {i} + {i}?",
             reference={"answer": str(2 * i)}, verifier_kind="numeric", domain="arithmetic")
        for i in range(1000)
    )  # fmt: skip
    task_ids = list(task_set.tasks.values_list("id", flat=True))
    student = ModelSpec.objects.create(name="bench student", backend="scripted")
    protocol = Protocol.objects.create(name="bench didactic", max_turns=5)
    runs = [
        Run.objects.create(
            name=f"bench run {n}", task_set=task_set, student=student, protocol=protocol,
            config={"protocol": {"max_turns": 5}}, config_hash=f"{n:064d}", status="succeeded",
        )
        for n in range(RUNS)
    ]  # fmt: skip
    started = time.perf_counter()
    raw = connection.connection  # the psycopg connection under Django's
    dialogue_columns = (
        "run_id, task_id, sample_index, seed, outcome, first_correct_turn, num_turns, "
        "end_reason, created_at"
    )
    with raw.cursor() as cursor:
        with cursor.copy(f"COPY dialogues_dialogue ({dialogue_columns}) FROM STDIN") as copy:
            for run in runs:
                for n in range(dialogues_per_run):
                    solved_at = rng.choice([1, 2, 3, 4, 5, None, None])
                    copy.write_row((
                        run.pk, task_ids[n % len(task_ids)], n // len(task_ids), n,
                        "solved" if solved_at else "unsolved", solved_at, 5,
                        "solved" if solved_at else "max_turns", "2026-11-21T00:00:00Z",
                    ))  # fmt: skip
        cursor.execute("SELECT id FROM dialogues_dialogue ORDER BY id")
        dialogue_ids = [row[0] for row in cursor.fetchall()]
        turn_columns = (
            "dialogue_id, index, round, role, kind, text, private_context, extracted_answer, "
            "is_correct, score, verdict_details, leak_flag, prompt_tokens, completion_tokens, "
            "latency_ms"
        )
        with cursor.copy(f"COPY dialogues_turn ({turn_columns}) FROM STDIN") as copy:
            for dialogue_id in dialogue_ids:
                for index in range(TURNS_PER_DIALOGUE):
                    student_turn = index % 2 == 0
                    copy.write_row((
                        dialogue_id, index, index // 2 + 1,
                        "student" if student_turn else "teacher",
                        "attempt" if student_turn else "feedback",
                        sentence(rng), "{}" if student_turn else '{"reference": {"answer": "4"}}',
                        str(rng.randint(0, 99)) if student_turn else "",
                        (rng.random() < 0.3) if student_turn else None,
                        None, "{}", (not student_turn) and rng.random() < 0.003, 20, 12, 1.0,
                    ))  # fmt: skip
        cursor.execute("ANALYZE")
    raw.commit()
    seconds = time.perf_counter() - started
    session = SessionStore()
    session["_auth_user_id"] = str(user.pk)
    session["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
    session["_auth_user_hash"] = user.get_session_auth_hash()
    session.create()
    return {
        "session": session.session_key,
        "dialogue_ids": dialogue_ids,
        "run_ids": [run.pk for run in runs],
        "seed_seconds": seconds,
    }


def page_urls(data: dict[str, object]) -> dict[str, list[str]]:
    rng = random.Random(7)
    dialogue_ids = data["dialogue_ids"]
    run_ids = data["run_ids"]
    assert isinstance(dialogue_ids, list) and isinstance(run_ids, list)
    return {
        "healthz (baseline)": ["/healthz"],
        "transcript list, filtered": [
            f"/dialogues/?run={rng.choice(run_ids)}&outcome=unsolved&page={rng.randint(1, 50)}"
            for _ in range(50)
        ]
        + [f"/dialogues/?first_correct=2-4&sort=-first_correct&page={n}" for n in range(1, 20)],
        "transcript list, search": [
            "/dialogues/?q=parity",
            "/dialogues/?q=telescoping",
            "/dialogues/?q=parity&outcome=unsolved",
            "/dialogues/?q=%22nearly+exactly%22+telescoping",
        ],
        "dialogue view": [f"/dialogues/{rng.choice(dialogue_ids)}/" for _ in range(200)],
    }


def client_worker(
    base: str,
    session: str,
    urls: list[str],
    seconds: float,
    clients: int,
    out: multiprocessing.Queue,
) -> None:
    """Runs in the second process: ``clients`` threads, each requesting until time is up."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def loop(offset: int) -> None:
        n = offset
        while time.monotonic() < deadline:
            request = urllib.request.Request(
                base + urls[n % len(urls)], headers={"Cookie": f"sessionid={session}"}
            )
            started = time.perf_counter()
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    response.read()
                    ok = response.status == 200
            except (urllib.error.URLError, OSError) as error:
                ok = False
                with lock:
                    errors.append(str(error))
            elapsed = time.perf_counter() - started
            with lock:
                if ok:
                    latencies.append(elapsed)
            n += 1

    threads = [threading.Thread(target=loop, args=(i * 7,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    out.put((latencies, errors[:5], len(errors)))


def measure(base: str, session: str, urls: list[str], seconds: float, clients: int) -> dict:
    queue: multiprocessing.Queue = multiprocessing.Queue()
    process = multiprocessing.Process(
        target=client_worker, args=(base, session, urls, seconds, clients, queue)
    )
    process.start()
    latencies, sample_errors, error_count = queue.get()
    process.join()
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000

    return {
        "requests": len(latencies),
        "errors": error_count,
        "sample_errors": sample_errors,
        "p50": pct(0.50) if latencies else float("nan"),
        "p95": pct(0.95) if latencies else float("nan"),
        "p99": pct(0.99) if latencies else float("nan"),
        "mean": statistics.fmean(latencies) * 1000 if latencies else float("nan"),
        "rps": len(latencies) / seconds,
    }


def query_counts(data: dict[str, object]) -> dict[str, int]:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from webapp.accounts.models import User

    client = Client(HTTP_HOST="localhost")
    client.force_login(User.objects.get(username="bench"))
    dialogue_ids = data["dialogue_ids"]
    assert isinstance(dialogue_ids, list)
    counts = {}
    for label, url in [
        ("list, page 1", "/dialogues/"),
        ("list, page 40, filtered", "/dialogues/?outcome=unsolved&page=40"),
        ("list, search", "/dialogues/?q=parity"),
        ("dialogue view", f"/dialogues/{dialogue_ids[0]}/"),
        ("dialogue view (another)", f"/dialogues/{dialogue_ids[-1]}/"),
    ]:
        with CaptureQueriesContext(connection) as context:
            assert client.get(url).status_code == 200, url
        counts[label] = len(context.captured_queries)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0, help="Load time per page kind.")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes.")
    parser.add_argument("--port", type=int, default=8791)
    parser.add_argument("--keep", action="store_true", help="Keep the database afterwards.")
    parser.add_argument(
        "--dialogues-per-run", type=int, default=DIALOGUES_PER_RUN, help="Smaller for a dry run."
    )
    args = parser.parse_args()

    base_url = os.environ.get("DATABASE_URL", "")
    if not base_url.startswith("postgres"):
        raise SystemExit("Set DATABASE_URL=postgres://...: this benchmark measures PostgreSQL.")
    url = bench_url(base_url)
    recreate_database(url)
    env = {**os.environ, "DATABASE_URL": url, "DEBUG": "false"}
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True
    )

    import django

    django.setup()
    server = None
    try:
        data = seed(args.dialogues_per_run)
        print(f"seeded {RUNS * args.dialogues_per_run:,} dialogues and "
              f"{RUNS * args.dialogues_per_run * TURNS_PER_DIALOGUE:,} turns with COPY "
              f"in {data['seed_seconds']:.0f} s")  # fmt: skip
        counts = query_counts(data)
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "webapp.wsgi:application",
             f"--bind=127.0.0.1:{args.port}", f"--workers={args.workers}", "--log-level=warning"],
            cwd=ROOT, env=env,
        )  # fmt: skip
        base = f"http://127.0.0.1:{args.port}"
        for _ in range(100):
            try:
                urllib.request.urlopen(base + "/healthz", timeout=2).read()
                break
            except OSError:
                time.sleep(0.2)
        print(f"load: {args.clients} concurrent clients from a second process, "
              f"{args.seconds:.0f} s per page kind, gunicorn with {args.workers} workers, "
              f"{os.cpu_count()} CPUs")  # fmt: skip
        header = (
            f"{'page':<28} {'requests':>8} {'req/s':>7} {'p50 ms':>7} {'p95 ms':>7} "
            f"{'p99 ms':>7} {'p95/baseline':>13}"
        )
        print(header)
        print("-" * len(header))
        baseline = None
        for label, urls in page_urls(data).items():
            result = measure(base, str(data["session"]), urls, args.seconds, args.clients)
            baseline = baseline or result["p95"]
            print(f"{label:<28} {result['requests']:>8} {result['rps']:>7.1f} "
                  f"{result['p50']:>7.1f} {result['p95']:>7.1f} {result['p99']:>7.1f} "
                  f"{result['p95'] / baseline:>12.1f}x")  # fmt: skip
            if result["errors"]:
                print(f"   {result['errors']} errors, e.g. {result['sample_errors'][:2]}")
        print()
        print("SQL queries per page (in-process, same data):")
        for label, count in counts.items():
            print(f"  {label:<28} {count}")
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=20)
        from django.db import connections

        connections.close_all()
        if not args.keep:
            drop_database(url)


if __name__ == "__main__":
    main()
