"""Benchmark reading transcripts at scale: 100,000 dialogues and 1,000,000 turns in PostgreSQL.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dialab \
        .venv/bin/python benchmarks/transcripts.py

It creates a database next to the one DATABASE_URL names (``<name>_transcripts_bench``), migrates
it, fills it with COPY (10 runs x 10,000 dialogues x 10 turns), starts gunicorn on loopback, and
loads it from a second process: 20 concurrent clients, each logged in, requesting pages for a
fixed time. It prints latency percentiles per page and, as the baseline measured in the same run
under the same load, /healthz (one trivial query): measured first, and again after each page
kind, so that each page's ratio is against the baselines taken just before and just after it.

Label saves: 20 annotators, each with a real session, load their labelling page for the CSRF
token and then POST answers to the real endpoint (``/annotations/items/<id>/answer/``, with a
fresh nonce each time, as the labelling page does), alternating new answers and changed ones:
first back to back like the pages, then each annotator saving every 0.5 s.

``--reuse`` keeps the seeded database between runs (migrating it to the current code, so a new
migration's backfill runs on the real 100k rows) and seeds only when it is missing or holds
another size. Before the load, each page kind is also timed one request at a time (no
concurrency), and SQL queries per page are counted in-process on the same data.
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


def bench_url(base: str, name: str = "") -> str:
    """The benchmark's own database, next to the one ``base`` names (never that one)."""
    parts = urlsplit(base)
    name = name or f"{parts.path.lstrip('/') or 'dialab'}_transcripts_bench"
    return urlunsplit(parts._replace(path=f"/{name}"))


def _admin(url: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path="/postgres"))


def database_exists(url: str) -> bool:
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(_admin(url), autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
    return found is not None


def recreate_database(url: str) -> None:
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(_admin(url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def drop_database(url: str) -> None:
    import psycopg

    with psycopg.connect(_admin(url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{urlsplit(url).path.lstrip("/")}" WITH (FORCE)')


# Words that few turns contain, as in real searches for a specific mistake or idea.
RARE_WORDS = {"parity": 0.01, "telescoping": 0.001}


def sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(6, 16))]
    words += [word for word, share in RARE_WORDS.items() if rng.random() < share]
    return " ".join(words).capitalize() + "."


def seed(dialogues_per_run: int) -> float:
    """Fill the database with COPY; returns the seconds the COPY took."""
    from django.db import connection

    from webapp.accounts.models import User
    from webapp.models_registry.models import ModelSpec
    from webapp.runs.models import Protocol, Run
    from webapp.runs.services import evaluation_config
    from webapp.tasks.models import Task, TaskSet

    rng = random.Random(2026)
    User.objects.create_user("bench", password="bench-password-1", role="researcher")
    task_set = TaskSet.objects.create(name="bench tasks")
    Task.objects.bulk_create(
        Task(task_set=task_set, position=i, prompt=f"What is {i} + {i}?",
             reference={"answer": str(2 * i)}, verifier_kind="numeric", domain="arithmetic")
        for i in range(1000)
    )  # fmt: skip
    tasks = list(task_set.tasks.order_by("position").values_list("id", "position"))
    student = ModelSpec.objects.create(
        name="bench student", backend="scripted", location="arithmetic-student"
    )
    teacher = ModelSpec.objects.create(
        name="bench teacher", backend="scripted", location="feedback-teacher"
    )
    protocol = Protocol.objects.create(name="bench didactic", max_turns=5)
    runs = []
    for n in range(RUNS):
        config = evaluation_config(
            task_set=task_set, protocol=protocol, student=student, teacher=teacher, seed=n
        )
        runs.append(
            Run.objects.create(
                name=f"bench run {n}",
                task_set=task_set,
                student=student,
                teacher=teacher,
                protocol=protocol,
                config=config.to_json(),
                config_hash=config.config_hash(),
                status="succeeded",
            )
        )
    started = time.perf_counter()
    raw = connection.connection  # the psycopg connection under Django's
    dialogue_columns = (
        "run_id, task_id, sample_index, seed, outcome, first_correct_turn, num_turns, "
        "end_reason, created_at, task_position, leaked, changed_answer, turn_kinds, student_name, "
        "ended_by, end_note"
    )
    with raw.cursor() as cursor:
        with cursor.copy(f"COPY dialogues_dialogue ({dialogue_columns}) FROM STDIN") as copy:
            for run in runs:
                for n in range(dialogues_per_run):
                    solved_at = rng.choice([1, 2, 3, 4, 5, None, None])
                    task_id, _ = tasks[n % len(tasks)]
                    copy.write_row((
                        run.pk, task_id, n // len(tasks), n,
                        "solved" if solved_at else "unsolved", solved_at, 5,
                        "solved" if solved_at else "max_turns", "2026-11-21T00:00:00Z",
                        0, False, False, 0, "",  # filled in by denormalise()
                        "", "",  # ended by no person, no note
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
    with raw.cursor() as cursor:
        cursor.execute("ANALYZE")
    denormalise()
    with raw.cursor() as cursor:  # Django's connection is in autocommit mode here
        # The backfills rewrote every dialogue row; dialogues_store inserts each row once, so
        # give the dead versions back to leave the table as the application would.
        cursor.execute("VACUUM FULL dialogues_dialogue")
        cursor.execute("VACUUM ANALYZE")
    return time.perf_counter() - started


def denormalise() -> None:
    """Fill what dialogues_store writes with each dialogue besides the COPY's columns (the
    task's position, the student's name, what the turns say, the search document) with the
    migrations' backfills."""
    from webapp.dialogues.models import Dialogue, Turn
    from webapp.dialogues.search import fill_documents
    from webapp.dialogues.summary import backfill, fill_student_names
    from webapp.runs.models import Run
    from webapp.tasks.models import Task

    backfill(dialogue_model=Dialogue, turn_model=Turn, task_model=Task)
    fill_student_names(dialogue_model=Dialogue, run_model=Run)
    fill_documents(dialogue_table=Dialogue._meta.db_table, turn_table=Turn._meta.db_table)


def _session_for(user) -> str:  # type: ignore[no-untyped-def]
    """A logged-in session in the configured store (as logging in makes one)."""
    from importlib import import_module

    from django.conf import settings

    session = import_module(settings.SESSION_ENGINE).SessionStore()
    session["_auth_user_id"] = str(user.pk)
    session["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
    session["_auth_user_hash"] = user.get_session_auth_hash()
    session.create()
    return str(session.session_key)


def prepare(clients: int) -> dict[str, object]:
    """Sessions, ids and labelling items for the load; idempotent on a reused database, and it
    clears the benchmark annotators' labels so every run saves from the same state."""
    from webapp.accounts.models import User
    from webapp.annotations.models import Annotation, LabelQuestion, LabelQueue, QueueAssignment
    from webapp.dialogues.models import Dialogue, Turn
    from webapp.runs.models import Run

    researcher = User.objects.get(username="bench")
    question = LabelQuestion.objects.get(schema__name="Feedback quality", key="helpfulness")
    queue, _ = LabelQueue.objects.get_or_create(
        name="bench labelling", defaults={"schema": question.schema, "created_by": researcher}
    )
    annotators = []
    first_ids = list(Dialogue.objects.order_by("pk").values_list("pk", flat=True)[: clients * 10])
    for n in range(clients):
        annotator, _ = User.objects.get_or_create(
            username=f"bench-annotator-{n}", defaults={"role": "annotator"}
        )
        for position, dialogue_id in enumerate(first_ids[n * 10 : (n + 1) * 10]):
            QueueAssignment.objects.get_or_create(
                queue=queue, dialogue_id=dialogue_id, annotator=annotator,
                defaults={"position": position},
            )  # fmt: skip
        annotators.append(annotator)
    Annotation.objects.filter(author__in=annotators).delete()  # revisions go with them
    QueueAssignment.objects.filter(queue=queue).update(status=QueueAssignment.Status.PENDING)
    labellers = []
    for annotator in annotators:
        items = list(
            QueueAssignment.objects.filter(queue=queue, annotator=annotator).order_by("position")
        )
        teacher_turns = Turn.objects.filter(
            dialogue_id__in=[item.dialogue_id for item in items], role=Turn.Role.TEACHER
        ).values_list("dialogue_id", "pk")
        item_of = {item.dialogue_id: item.pk for item in items}
        labellers.append({
            "session": _session_for(annotator),
            "page": f"/annotations/items/{items[0].pk}/",
            "saves": [(item_of[dialogue_id], turn_id) for dialogue_id, turn_id in teacher_turns],
        })  # fmt: skip
    return {
        "session": _session_for(researcher),
        "dialogue_ids": list(Dialogue.objects.order_by("pk").values_list("pk", flat=True)),
        "run_ids": list(Run.objects.order_by("pk").values_list("pk", flat=True)),
        "question_id": question.pk,
        "labellers": labellers,
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
        + [f"/dialogues/?first_correct=2-4&sort=-first_correct&page={n}" for n in range(1, 20)]
        + [f"/dialogues/?sort=student&outcome=solved&page={n}" for n in range(1, 11)],
        "transcript list, search": [
            "/dialogues/?q=parity",
            "/dialogues/?q=telescoping",
            "/dialogues/?q=parity&outcome=unsolved",
            "/dialogues/?q=%22nearly+exactly%22+telescoping",
        ],
        "dialogue view": [f"/dialogues/{rng.choice(dialogue_ids)}/" for _ in range(200)],
    }


# A client's plan: its Cookie header and the requests it cycles through, each (path, form body
# or None for a GET). A "{nonce}" or "{value}" in a body is filled in per request.
Plan = tuple[str, list[tuple[str, str | None]]]


def page_plans(session: str, urls: list[str], clients: int) -> list[Plan]:
    """Every client with the same session, starting at a different place in the list."""
    requests: list[tuple[str, str | None]] = [(url, None) for url in urls]
    return [
        (f"sessionid={session}", requests[i * 7 % len(urls) :] + requests[: i * 7 % len(urls)])
        for i in range(clients)
    ]


def label_plans(data: dict[str, object]) -> list[Plan]:
    """One annotator per client, answering the helpfulness of its items' teacher turns."""
    labellers = data["labellers"]
    assert isinstance(labellers, list)
    plans = []
    for labeller in labellers:
        requests: list[tuple[str, str | None]] = [(labeller["page"], None)]  # CSRF token
        requests += [
            (f"/annotations/items/{item}/answer/",
             f"question={data['question_id']}&turn={turn}&value={{value}}&nonce={{nonce}}")
            for item, turn in labeller["saves"]
        ]  # fmt: skip
        plans.append((f"sessionid={labeller['session']}", requests))
    return plans


def _csrf(response_headers, html: str) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    """The CSRF cookie the page set and the token its forms carry."""
    import re

    cookie = next(
        header.split(";", 1)[0]
        for header in response_headers.get_all("Set-Cookie") or []
        if header.startswith("csrftoken=")
    )
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert token, "no CSRF token on the labelling page"
    return cookie, token[1]


def client_worker(
    base: str, plans: list[Plan], seconds: float, out: multiprocessing.Queue, interval: float
) -> None:
    """Runs in the second process: one thread per plan, each requesting until time is up. A
    plan whose first request is a GET of a form page posts the rest with its CSRF token.

    With ``interval`` 0, each client sends its next request as soon as the last one answers;
    otherwise it sends one every ``interval`` seconds (the clients spread over the first one),
    as people working at a steady pace do."""
    import resource
    import uuid

    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    ready = threading.Barrier(len(plans))
    deadline = [0.0]

    def loop(plan: Plan, offset: float) -> None:
        cookie, requests = plan
        headers = {"Cookie": cookie}
        if any(body is not None for _, body in requests):
            with urllib.request.urlopen(
                urllib.request.Request(base + requests[0][0], headers=headers), timeout=30
            ) as response:
                csrf_cookie, token = _csrf(response.headers, response.read().decode())
            headers = {
                "Cookie": f"{cookie}; {csrf_cookie}",
                "X-CSRFToken": token,
                "Accept": "application/json",
                "Content-Type": "application/x-www-form-urlencoded",
            }
            requests = requests[1:]
        if ready.wait() == 0:
            deadline[0] = time.monotonic() + seconds
        while not deadline[0]:
            time.sleep(0.001)
        n = 0
        next_send = deadline[0] - seconds + offset
        while time.monotonic() < deadline[0]:
            if interval:
                time.sleep(max(0.0, next_send - time.monotonic()))
                next_send += interval
            path, body = requests[n % len(requests)]
            data = None
            if body is not None:  # each pass over the items gives every answer a new value
                value = n // len(requests) % 5 + 1
                data = body.format(value=value, nonce=uuid.uuid4().hex).encode()
            request = urllib.request.Request(base + path, data=data, headers=headers)
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

    threads = [
        threading.Thread(target=loop, args=(plan, interval * i / len(plans)))
        for i, plan in enumerate(plans)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out.put((latencies, errors[:5], len(errors), usage.ru_utime + usage.ru_stime))


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU time the processes have used so far (Linux /proc)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone since it was listed
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


def machine_cpu_seconds() -> float:
    """CPU time every process on the machine has used so far, all cores (Linux /proc/stat)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def app_pids(server: subprocess.Popen) -> list[int]:
    """gunicorn's master and its workers."""
    children = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
    return [server.pid, *map(int, children)]


def measure(
    base: str, plans: list[Plan], seconds: float, app: list[int], interval: float = 0.0
) -> dict:
    """Latencies of the plans' requests, and the CPU time per request that the load generator,
    the application (``app``: its pids) and everything else on the machine (the database,
    mostly) spent while they ran. ``interval``: see client_worker."""
    queue: multiprocessing.Queue = multiprocessing.Queue()
    process = multiprocessing.Process(
        target=client_worker, args=(base, plans, seconds, queue, interval)
    )
    app_before, machine_before = cpu_seconds(app), machine_cpu_seconds()
    process.start()
    latencies, sample_errors, error_count, client_cpu = queue.get()
    process.join()
    cpu = {"client": client_cpu, "app": cpu_seconds(app) - app_before}
    cpu["other"] = machine_cpu_seconds() - machine_before - cpu["client"] - cpu["app"]
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
        "max": latencies[-1] * 1000 if latencies else float("nan"),
        "mean": statistics.fmean(latencies) * 1000 if latencies else float("nan"),
        "rps": len(latencies) / seconds,
        "cpu_ms": {
            name: used / max(1, len(latencies) + error_count) * 1000 for name, used in cpu.items()
        },
    }


def _headline_name(label: str) -> str:
    """ "transcript list, filtered" -> "transcript_list_filtered"."""
    return "_".join(label.replace("(POST)", "").replace(",", " ").split())


def _row(label: str, result: dict, baseline: float, next_baseline: float) -> str:
    return (
        f"{label:<28} {result['requests']:>8} {result['rps']:>7.1f} {result['p50']:>7.1f} "
        f"{result['p95']:>7.1f} {result['p99']:>7.1f} {result['p95'] / baseline:>12.1f}x "
        f"{next_baseline:>11.1f} ms "
        + " ".join(f"{result['cpu_ms'][name]:>6.1f}" for name in ("client", "app", "other"))
    )


def single_requests(base: str, session: str, urls: list[str], count: int = 20) -> list[float]:
    """Milliseconds of ``count`` requests made one after another, with nothing else running."""
    times = []
    for url in (urls * count)[:count]:
        request = urllib.request.Request(base + url, headers={"Cookie": f"sessionid={session}"})
        started = time.perf_counter()
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
        times.append((time.perf_counter() - started) * 1000)
    return sorted(times)


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
    labeller = data["labellers"][0]  # type: ignore[index]
    item, turn = labeller["saves"][0]
    annotator = Client(HTTP_HOST="localhost")
    annotator.cookies["sessionid"] = labeller["session"]
    with CaptureQueriesContext(connection) as context:
        response = annotator.post(
            f"/annotations/items/{item}/answer/",
            {"question": data["question_id"], "turn": turn, "value": "3", "nonce": "count-1"},
            headers={"accept": "application/json"},
        )
        assert response.status_code == 200, response.content
    counts["label save"] = len(context.captured_queries)
    return counts


def profile_pages(data: dict[str, object], requests: int, only: list[str]) -> None:
    """Where each page's time goes: cProfile over ``requests`` in-process requests of each page
    kind (the whole Django stack, middleware included, on the benchmark's data), printed as the
    functions with the most time of their own and the most time under them."""
    import cProfile
    import io
    import pstats

    from django.test import Client

    from webapp.accounts.models import User

    client = Client(HTTP_HOST="localhost")
    client.force_login(User.objects.get(username="bench"))
    for label, urls in page_urls(data).items():
        if label.startswith("healthz") or (only and not any(o in label for o in only)):
            continue
        plan = (urls * requests)[:requests]
        for url in plan[:10]:  # warm: templates compiled, caches filled
            client.get(url)
        profiler = cProfile.Profile()
        started = time.process_time()
        profiler.enable()
        for url in plan:
            assert client.get(url).status_code == 200, url
        profiler.disable()
        cpu_ms = (time.process_time() - started) * 1000 / requests
        print(f"\n== {label}: {requests} requests, {cpu_ms:.1f} ms CPU each under the profiler")
        for order in ("tottime", "cumulative"):
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(25)
            print(f"-- by {order}")
            print("\n".join(out.getvalue().splitlines()[6:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0, help="Load time per page kind.")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes.")
    parser.add_argument("--port", type=int, default=8791)
    parser.add_argument(
        "--database",
        default="",
        help="Database name (default: <DATABASE_URL's>_transcripts_bench).",
    )
    parser.add_argument("--keep", action="store_true", help="Keep the database afterwards.")
    parser.add_argument(
        "--reuse", action="store_true",
        help="Reuse a seeded database of the same size (migrated to the current code); keeps it.",
    )  # fmt: skip
    parser.add_argument(
        "--only", action="append", default=[], help="Measure only page kinds containing this."
    )
    parser.add_argument(
        "--profile", type=int, default=0, metavar="N",
        help="Instead of the load: profile N in-process requests of each page kind.",
    )  # fmt: skip
    parser.add_argument(
        "--dialogues-per-run", type=int, default=DIALOGUES_PER_RUN, help="Smaller for a dry run."
    )
    args = parser.parse_args()

    base_url = os.environ.get("DATABASE_URL", "")
    if not base_url.startswith("postgres"):
        raise SystemExit("Set DATABASE_URL=postgres://...: this benchmark measures PostgreSQL.")
    url = bench_url(base_url, args.database)
    reuse = args.reuse and database_exists(url)
    if not reuse:
        recreate_database(url)
    env = {**os.environ, "DATABASE_URL": url, "DEBUG": "false"}
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True
    )
    migrate_seconds = time.perf_counter() - started

    import django

    django.setup()
    from webapp.dialogues.models import Dialogue
    from webapp.runs.models import Run

    expected = RUNS * args.dialogues_per_run
    # Runs seeded before configurations were frozen in full cannot be read by the run page.
    outdated = Run.objects.exclude(config__has_key="schema").exists()
    if reuse and (Dialogue.objects.count() != expected or outdated):
        print(f"{url.rsplit('/', 1)[-1]} holds another size or old runs: seeding it again")
        from django.db import connections

        connections.close_all()
        recreate_database(url)
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True
        )
        reuse = False
    server = None
    try:
        if reuse:
            # A migration's backfill may have rewritten every row, leaving the table twice its
            # size: compact it as the seeding does, so that the new code is measured on the
            # table a fresh seed would give.
            import psycopg

            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("VACUUM FULL dialogues_dialogue")
                conn.execute("VACUUM ANALYZE")
            name = url.rsplit("/", 1)[-1]
            print(f"reusing {expected:,} dialogues and {expected * TURNS_PER_DIALOGUE:,} turns "
                  f"in {name} (migrate took {migrate_seconds:.1f} s)")  # fmt: skip
        else:
            seconds = seed(args.dialogues_per_run)
            print(f"seeded {expected:,} dialogues and {expected * TURNS_PER_DIALOGUE:,} turns "
                  f"with COPY in {seconds:.0f} s")  # fmt: skip
        data = prepare(args.clients)
        if args.profile:
            profile_pages(data, args.profile, args.only)
            return
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
        session = str(data["session"])
        pids = app_pids(server)
        pages = {
            label: urls
            for label, urls in page_urls(data).items()
            if label.startswith("healthz") or not args.only or any(o in label for o in args.only)
        }
        print("one request at a time (20 each after warming up; saves: 3 s): median / max ms")
        for label, urls in pages.items():
            single_requests(base, session, urls, count=8)  # every worker warm
            times = single_requests(base, session, urls)
            print(f"  {label:<28} {statistics.median(times):>7.1f} {times[-1]:>7.1f}")
        if not args.only or any(o in "label save" for o in args.only):
            alone = measure(base, label_plans(data)[:1], 3.0, pids)  # one annotator, for 3 s
            print(f"  {'label save (POST)':<28} {alone['p50']:>7.1f} {alone['max']:>7.1f}")
        print(f"load: {args.clients} concurrent clients from a second process, "
              f"{args.seconds:.0f} s per page kind, gunicorn with {args.workers} workers, "
              f"{os.cpu_count()} CPUs")  # fmt: skip
        header = (
            f"{'page':<28} {'requests':>8} {'req/s':>7} {'p50 ms':>7} {'p95 ms':>7} "
            f"{'p99 ms':>7} {'p95/baseline':>13} {'next baseline':>14} "
            f"{'CPU ms per request: client':>26} {'app':>6} {'other':>6}"
        )
        print(header)
        print("-" * len(header))
        plans = {label: page_plans(session, urls, args.clients) for label, urls in pages.items()}
        if not args.only or any(o in "label save" for o in args.only):
            plans["label save (POST)"] = label_plans(data)
        baseline_plan = plans.pop("healthz (baseline)")
        # Other work on the machine comes and goes: /healthz is measured again right after each
        # page kind, and each ratio is against the mean of the baselines on either side of it.
        before = measure(base, baseline_plan, args.seconds, pids)
        print(_row("healthz (baseline)", before, before["p95"], before["p95"]))
        headline = [("healthz_app_cpu_ms_per_request", before["cpu_ms"]["app"])]
        for label, plan in plans.items():
            result = measure(base, plan, args.seconds, pids)
            after = measure(base, baseline_plan, args.seconds / 3, pids)
            baseline = (before["p95"] + after["p95"]) / 2
            print(_row(label, result, baseline, after["p95"]))
            name = _headline_name(label)
            headline += [
                (f"{name}_p95_vs_healthz", result["p95"] / baseline),
                (f"{name}_app_cpu_ms_per_request", result["cpu_ms"]["app"]),
            ]
            if result["errors"]:
                print(f"   {result['errors']} errors, e.g. {result['sample_errors'][:2]}")
            before = after
        if "label save (POST)" in plans:
            # The same annotators, each saving twice a second: faster than anyone labels, so
            # the load a labelling team puts on the server rather than the most it can take.
            paced = measure(base, label_plans(data), args.seconds, pids, interval=0.5)
            print(f"\nlabel saves at a person's pace ({args.clients} annotators, each saving "
                  f"every 0.5 s): {paced['rps']:.1f} req/s, p50 {paced['p50']:.1f} ms, "
                  f"p95 {paced['p95']:.1f} ms, p99 {paced['p99']:.1f} ms, "
                  f"{paced['errors']} errors")  # fmt: skip
        print()
        print("SQL queries per page (in-process, same data):")
        for label, count in counts.items():
            print(f"  {label:<28} {count}")
        print()
        for name, value in headline:
            print(f"{name}: {value:.1f}")
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=20)
        from django.db import connections

        connections.close_all()
        if not (args.keep or args.reuse):
            drop_database(url)


if __name__ == "__main__":
    main()
