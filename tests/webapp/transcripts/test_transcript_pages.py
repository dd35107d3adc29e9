"""Browsing transcripts: the filtered, sorted list, one dialogue, and two runs side by side."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.factories import StudentFactory, TaskFactory, TaskSetFactory
from tests.transcript_builders import NAMES, attempt, feedback, make_run, store
from webapp.dialogues.models import Dialogue, Turn
from webapp.dialogues.selectors import align_rounds
from webapp.transcripts.filters import DialogueFilters
from webapp.transcripts.selectors import dialogue_list

pytestmark = pytest.mark.django_db


def listed_dialogues(response: Any) -> list[Dialogue]:
    """The dialogues of a list page's rows, in their order."""
    rows = response.context["page"]
    by_pk = Dialogue.objects.select_related("task", "run__student").in_bulk([r.pk for r in rows])
    return [by_pk[row.pk] for row in rows]


def names(response: Any) -> list[str]:
    return [NAMES[dialogue.seed] for dialogue in listed_dialogues(response)]


def listed(client: Any, params: dict[str, Any]) -> set[str]:
    response = client.get(reverse("dialogue_list"), params)
    assert response.status_code == 200
    assert not response.context["form"].notes, response.context["form"].notes
    return set(names(response))


ALL = set(NAMES)

FILTER_CASES = [
    ({"outcome": "solved"}, {"a_first", "a_late", "b_solved"}),
    ({"outcome": "unsolved"}, {"a_question", "b_same"}),
    ({"outcome": "error"}, set()),
    ({"first_correct": "1"}, {"a_first"}),
    ({"first_correct": "2-3"}, {"a_late", "b_solved"}),
    ({"first_correct": "3+"}, {"a_late"}),
    ({"first_correct": "-2"}, {"a_first", "b_solved"}),
    ({"first_correct": "5"}, set()),
    ({"turns": "1"}, {"a_first"}),
    ({"turns": "2-"}, ALL - {"a_first"}),
    ({"turns": "3"}, {"a_late"}),
    ({"leak": "yes"}, {"a_late"}),
    ({"leak": "no"}, ALL - {"a_late"}),
    ({"has": ["question"]}, {"a_question"}),
    ({"has": ["question", "feedback"]}, {"a_question"}),
    ({"has": ["feedback"]}, ALL - {"a_first"}),
    ({"has": ["shard"]}, set()),
    # Changed its answer: 4 → 4 → 3 did; 5 → 5 did not; "" → 9 did not (no answer is no answer).
    ({"changed": "yes"}, {"a_late"}),
    ({"changed": "no"}, ALL - {"a_late"}),
    ({"q": "carry"}, {"a_late"}),
    ({"q": "CARRY column"}, {"a_late"}),
    ({"q": "base ten"}, {"a_question"}),
    ({"q": "carry ten"}, set()),  # every word must match in the same turn
    ({"q": "zebra"}, set()),
    ({"outcome": "solved", "leak": "no", "turns": "1-"}, {"a_first", "b_solved"}),
]


@pytest.mark.parametrize(("params", "expected"), FILTER_CASES)
def test_each_filter_keeps_exactly_the_matching_dialogues(
    researcher_client: Any, corpus: dict[str, Any], params: dict[str, Any], expected: set[str]
) -> None:
    assert listed(researcher_client, params) == expected


def test_filters_by_run_task_set_task_and_student(researcher_client: Any, corpus: Any) -> None:
    client, run_a, run_b = researcher_client, corpus["run_a"], corpus["run_b"]
    assert listed(client, {"run": run_a.pk}) == {"a_first", "a_late", "a_question"}
    assert listed(client, {"run": run_b.pk}) == {"b_same", "b_solved"}
    assert listed(client, {"task_set": corpus["second_set"].pk}) == {"a_question", "b_solved"}
    assert listed(client, {"task": corpus["task_one"].pk}) == {"a_first", "a_late", "b_same"}
    assert listed(client, {"task": 999999}) == set()
    assert listed(client, {"student": run_b.student_id}) == {"b_same", "b_solved"}
    assert listed(client, {"run": run_b.pk, "task": corpus["task_two"].pk}) == {"b_solved"}


def test_search_is_stemmed_full_text_on_postgresql(researcher_client: Any, corpus: Any) -> None:
    if connection.vendor != "postgresql":
        # The SQLite fallback matches substrings, which also finds "run" in "running".
        assert listed(researcher_client, {"q": "run"}) == {"b_same"}
        return
    assert listed(researcher_client, {"q": "run penguin"}) == {"b_same"}  # stems both words
    assert listed(researcher_client, {"q": '"base ten"'}) == {"a_question"}  # a phrase
    assert listed(researcher_client, {"q": "carry -column"}) == set()  # an exclusion


def test_search_index_exists_only_on_postgresql() -> None:
    with connection.cursor() as cursor:
        indexes = connection.introspection.get_constraints(cursor, Turn._meta.db_table)
    assert ("dialogues_turn_text_search" in indexes) == (connection.vendor == "postgresql")


@pytest.mark.parametrize("text", ["'\"&|!:*()<>", "-", "a OR", "\\", "%_"])
def test_search_never_fails_on_odd_input(researcher_client: Any, corpus: Any, text: str) -> None:
    assert researcher_client.get(reverse("dialogue_list"), {"q": text}).status_code == 200


@pytest.mark.parametrize(
    ("sort", "key"),
    [
        ("first_correct", lambda d: d.first_correct_turn),
        ("turns", lambda d: d.num_turns),
        ("outcome", lambda d: d.outcome),
        ("run", lambda d: d.run_id),
        ("task", lambda d: (d.task.position, d.task_id)),
        ("student", lambda d: d.run.student.name),
        ("created", lambda d: d.created_at),
    ],
)
@pytest.mark.parametrize("descending", [False, True])
def test_sorts_by_each_column_both_ways(
    researcher_client: Any, corpus: Any, sort: str, key: Any, descending: bool
) -> None:
    response = researcher_client.get(
        reverse("dialogue_list"), {"sort": f"-{sort}" if descending else sort}
    )
    rows = listed_dialogues(response)
    assert len(rows) == len(NAMES)
    present = [key(row) for row in rows if key(row) is not None]
    assert present == sorted(present, reverse=descending)
    # Empty values (an unsolved dialogue's first correct turn) come last both ways.
    missing = [index for index, row in enumerate(rows) if key(row) is None]
    assert missing == list(range(len(present), len(rows)))


def test_first_correct_sort_order_is_exact(researcher_client: Any, corpus: Any) -> None:
    response = researcher_client.get(reverse("dialogue_list"), {"sort": "first_correct"})
    assert names(response)[:3] == ["a_first", "b_solved", "a_late"]
    response = researcher_client.get(reverse("dialogue_list"), {"sort": "-first_correct"})
    assert names(response)[:3] == ["a_late", "b_solved", "a_first"]


def test_bad_parameters_are_ignored_with_a_note(researcher_client: Any, corpus: Any) -> None:
    params = {
        "first_correct": "abc", "turns": "4-2", "outcome": "maybe", "run": "x", "sort": "bogus",
        "has": "nope", "task": "-3", "leak": "sometimes", "student": "999999",
    }  # fmt: skip
    response = researcher_client.get(reverse("dialogue_list"), params)
    assert response.status_code == 200
    assert set(names(response)) == ALL
    html = response.content.decode()
    for name in params:
        assert f"Ignored {name}=" in html
    assert "The range starts after it ends." in html


def test_pagination_keeps_the_filters(researcher_client: Any, corpus: Any) -> None:
    task_set = corpus["first_set"]
    run = make_run("big", task_set)
    tasks = TaskFactory.create_batch(55, task_set=task_set)
    for task in tasks:
        store(run, task.pk, 0, "a_first", [attempt("3", "3", True)])
    response = researcher_client.get(reverse("dialogue_list"), {"run": run.pk, "outcome": "solved"})
    assert len(response.context["page"]) == 50
    html = response.content.decode()
    assert f"?run={run.pk}&amp;outcome=solved&amp;page=2" in html
    second = researcher_client.get(
        reverse("dialogue_list"), {"run": run.pk, "outcome": "solved", "page": 2}
    )
    assert len(second.context["page"]) == 5


def test_htmx_request_gets_the_rows_and_a_short_url(researcher_client: Any, corpus: Any) -> None:
    response = researcher_client.get(
        reverse("dialogue_list"),
        {"q": "", "outcome": "unsolved", "leak": "", "sort": "-run"},
        headers={"HX-Request": "true", "HX-Target": "dialogue-rows"},
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="dialogue-rows">')
    assert "<form" not in html
    assert response["HX-Push-Url"] == "/dialogues/?outcome=unsolved&sort=-run"


def test_list_page_uses_a_fixed_number_of_queries(researcher_client: Any) -> None:
    task_set = TaskSetFactory()
    run = make_run("r", task_set)
    params = {
        "run": run.pk, "task_set": task_set.pk, "student": run.student_id, "q": "answer",
        "outcome": "solved", "first_correct": "1+", "turns": "1-4", "leak": "no",
        "changed": "no", "has": ["attempt"], "sort": "-created",
    }  # fmt: skip

    def queries_for(count: int) -> int:
        for task in TaskFactory.create_batch(count, task_set=task_set):
            store(run, task.pk, 0, "a_first", [attempt("The answer is 3.", "3", True)])
        with CaptureQueriesContext(connection) as context:
            response = researcher_client.get(reverse("dialogue_list"), params)
        assert len(response.context["page"]) == Dialogue.objects.filter(run=run).count()
        return len(context.captured_queries)

    assert queries_for(2) == queries_for(30)


def test_dialogue_page_uses_a_fixed_number_of_queries(researcher_client: Any, corpus: Any) -> None:
    def queries_for(name: str) -> int:
        dialogue = Dialogue.objects.get(seed=NAMES.index(name))
        with CaptureQueriesContext(connection) as context:
            researcher_client.get(reverse("dialogue_detail", args=[dialogue.pk]), {"page": 1})
        return len(context.captured_queries)

    assert queries_for("a_first") == queries_for("a_late")  # one turn vs five turns


HOSTILE = (
    "<script>alert('x')</script> and <img src=x onerror=alert(1)> and "
    "[click me](javascript:alert(1)) and $x^2 + 1$ and\n\n```python\nprint('hi')\n```"
)


def test_model_text_is_sanitized_markdown_with_math(researcher_client: Any, corpus: Any) -> None:
    task = TaskFactory(
        task_set=corpus["first_set"], prompt="Solve $x^2 = 4$ <script>bad()</script>"
    )
    store(corpus["run_a"], task.pk, 0, "a_first", [
        attempt(HOSTILE, "<b>3</b>", True),
        feedback(HOSTILE, leak=True),
    ])  # fmt: skip
    dialogue = Dialogue.objects.get(task=task)
    html = researcher_client.get(reverse("dialogue_detail", args=[dialogue.pk])).content.decode()
    assert "<script>alert" not in html and "<script>bad" not in html
    assert "&lt;script&gt;alert" in html  # shown as text, not dropped
    assert not re.search(r"<[a-z][^>]*\son[a-z]+=", html)  # no event-handler attribute
    assert "<img" not in html
    assert 'href="javascript:' not in html
    assert "<math" in html and "<msup>" in html  # math became MathML
    assert 'class="codehilite"' in html  # fenced code is highlighted
    assert "<code>&lt;b&gt;3&lt;/b&gt;</code>" in html  # the extracted answer is escaped
    assert "Leak flagged" in html


def test_list_rows_escape_names_and_prompts(researcher_client: Any) -> None:
    """The rows and the filter controls (Jinja2 fragments) escape every value."""
    task_set = TaskSetFactory()
    task = TaskFactory(task_set=task_set, prompt='<script>bad()</script> "quoted" & more')
    run = make_run("<b>run</b>", task_set, student=StudentFactory(name="<i>student</i>"))
    store(run, task.pk, 0, "a_first", [attempt("3", "3", True)])
    html = researcher_client.get(reverse("dialogue_list"), {"label": '"><b>x'}).content.decode()
    assert "<script>bad" not in html and "<b>run" not in html and "<i>student" not in html
    # Jinja2 writes a double quote as &#34; where Django writes &quot;.
    assert 'title="&lt;script&gt;bad()&lt;/script&gt; &#34;quoted&#34; &amp; more"' in html
    assert "&lt;b&gt;run&lt;/b&gt;</a>" in html and "&lt;i&gt;student&lt;/i&gt;" in html
    assert f"#{run.pk} &lt;b&gt;run&lt;/b&gt;</option>" in html
    assert 'value="&#34;&gt;&lt;b&gt;x"' in html and '"><b>x' not in html


def test_dialogue_page_shows_verdicts_private_context_and_compare_links(
    researcher_client: Any, corpus: Any
) -> None:
    late = Dialogue.objects.get(seed=NAMES.index("a_late"))
    html = researcher_client.get(reverse("dialogue_detail", args=[late.pk])).content.decode()
    assert html.count("✘ wrong") == 2 and html.count("✔ correct") == 1
    assert "extracted answer: <code>4</code>" in html
    assert html.count('class="private-context"') >= 2  # the task's reference and the teacher's
    assert 'id="show-private"' in html and "<details" in html
    assert html.count("⚠ Leak flagged") == 1
    compare = (
        f"{reverse('dialogue_compare')}?task={late.task_id}&amp;left_run={late.run_id}"
        f"&amp;right_run={corpus['run_b'].pk}&amp;sample=1"
    )
    assert compare in html


def test_list_rows_link_to_their_dialogues(researcher_client: Any, corpus: Any) -> None:
    """Rows link relatively ("<pk>/?<the list's query>"), which resolves to the dialogue page
    from the list's address with or without a query."""
    from urllib.parse import urljoin

    list_url = reverse("dialogue_list")
    html = researcher_client.get(list_url, {"run": corpus["run_a"].pk}).content.decode()
    hrefs = re.findall(r'<tr><td><a href="([^"]+)">#(\d+)</a>', html)
    assert hrefs
    for href, pk in hrefs:
        for page in (list_url, f"{list_url}?run={corpus['run_a'].pk}"):
            target = urljoin(f"http://testserver{page}", href.replace("&amp;", "&"))
            assert target.startswith(f"http://testserver{reverse('dialogue_detail', args=[pk])}?")
    opened = researcher_client.get(urljoin(list_url, hrefs[0][0].replace("&amp;", "&")))
    assert opened.status_code == 200 and opened.context["dialogue"].pk == int(hrefs[0][1])


def test_dialogue_page_walks_the_list_it_came_from(researcher_client: Any, corpus: Any) -> None:
    listing = researcher_client.get(
        reverse("dialogue_list"), {"run": corpus["run_a"].pk, "sort": "first_correct"}
    )
    order = [d.pk for d in listing.context["page"]]
    assert (
        f"?run={corpus['run_a'].pk}&amp;sort=first_correct&amp;page=1" in listing.content.decode()
    )
    middle = researcher_client.get(
        reverse("dialogue_detail", args=[order[1]]),
        {"run": corpus["run_a"].pk, "sort": "first_correct", "page": 1},
    )
    neighbours = middle.context["neighbours"]
    assert (neighbours.previous_pk, neighbours.next_pk) == (order[0], order[2])
    assert 'id="next-dialogue"' in middle.content.decode()
    direct = researcher_client.get(reverse("dialogue_detail", args=[order[1]]))
    assert direct.context["neighbours"] is None


def test_align_rounds_pairs_turns_round_by_round() -> None:
    def make(round_: int, role: str) -> Turn:
        return Turn(round=round_, role=role, index=0, kind="attempt", text="")

    left = [make(1, "student"), make(1, "teacher"), make(2, "student")]
    right = [make(1, "student"), make(1, "teacher"), make(2, "student"), make(2, "teacher"),
             make(3, "student")]  # fmt: skip
    rounds = align_rounds(left=left, right=right)
    assert [row.round for row in rounds] == [1, 2, 3]
    assert [len(row.left) for row in rounds] == [2, 1, 0]
    assert [len(row.right) for row in rounds] == [2, 2, 1]


def test_compare_shows_two_runs_side_by_side(researcher_client: Any, corpus: Any) -> None:
    params = {
        "task": corpus["task_one"].pk, "left_run": corpus["run_a"].pk,
        "right_run": corpus["run_b"].pk, "sample": 1,
    }  # fmt: skip
    response = researcher_client.get(reverse("dialogue_compare"), params)
    assert [row.round for row in response.context["rounds"]] == [1, 2, 3]
    html = response.content.decode()
    # Sample 1 exists only in run A: the right side explains it instead of failing.
    assert "This run has no dialogue of this task with sample 1" in html
    response = researcher_client.get(reverse("dialogue_compare"), {**params, "sample": 0})
    rounds = response.context["rounds"]
    assert [row.round for row in rounds] == [1, 2]
    assert [t.extracted_answer for t in rounds[0].right if t.kind == "attempt"] == ["5"]
    html = response.content.decode()
    assert "ended before this turn" in html  # run A solved at turn 1, run B went on
    assert html.count("✔ correct") == 1 and html.count("✘ wrong") == 2


def test_compare_explains_missing_choices(researcher_client: Any, corpus: Any) -> None:
    url = reverse("dialogue_compare")
    # No task yet: the tasks the runs played, each a link, and a box for a task id.
    choosing = researcher_client.get(url).content.decode()
    assert "Pick a task" in choosing and 'id="compare-task"' in choosing
    picker = researcher_client.get(url, {"task": corpus["task_one"].pk}).content.decode()
    assert 'id="compare-picker"' in picker and "run A" in picker and "run B" in picker
    lonely = TaskFactory(task_set=corpus["first_set"])
    assert (
        "No run has played this task yet"
        in researcher_client.get(url, {"task": lonely.pk}).content.decode()
    )
    bad = researcher_client.get(url, {"task": "abc", "left_run": "999999"})
    assert bad.status_code == 200 and "Ignored task=" in bad.content.decode()


def test_anonymous_users_are_sent_to_login(client: Any, corpus: Any) -> None:
    dialogue = Dialogue.objects.first()
    for url in [
        reverse("dialogue_list"),
        reverse("dialogue_detail", args=[dialogue.pk]),
        reverse("dialogue_compare") + f"?task={corpus['task_one'].pk}",
    ]:
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_annotators_read_only_the_transcripts_queued_for_them(
    annotator_client: Any, annotator: Any, researcher: Any, corpus: Any
) -> None:
    from webapp.annotations.models import LabelSchema
    from webapp.annotations.services import queue_create

    assigned, other = Dialogue.objects.order_by("pk")[:2]
    assert annotator_client.get(reverse("dialogue_detail", args=[assigned.pk])).status_code == 404
    queue_create(
        name="q", schema=LabelSchema.objects.first(), filter_query="",
        dialogue_ids=[assigned.pk], annotators=[annotator], annotators_per_item=1,
        created_by=researcher,
    )  # fmt: skip
    listed = annotator_client.get(reverse("dialogue_list"))
    assert [d.pk for d in listed.context["page"]] == [assigned.pk]
    assert annotator_client.get(reverse("dialogue_detail", args=[assigned.pk])).status_code == 200
    assert annotator_client.get(reverse("dialogue_detail", args=[other.pk])).status_code == 404


def test_selector_takes_a_filters_value(corpus: Any) -> None:
    filters = DialogueFilters(outcome="unsolved", sort="-turns")
    # Both have two turns: the tie-breakers (run, task, sample) descend with the sort key, so
    # one index read backwards serves both directions; run B is the later run.
    assert [NAMES[d.seed] for d in dialogue_list(filters=filters)] == ["b_same", "a_question"]
    assert dialogue_list(filters=filters).filter(leaked=True).count() == 0


def test_counts_stop_at_their_limit(researcher_client: Any, monkeypatch: Any) -> None:
    """Past its limit a count says "more than N"; a word search has a lower limit than the
    filters (see pagination.SEARCH_COUNT_LIMIT)."""
    from webapp.dialogues import search
    from webapp.transcripts import pagination, views

    run = make_run("counted", TaskSetFactory())
    for task in TaskFactory.create_batch(5, task_set=run.task_set):
        store(run, task.pk, 0, "a_first", [attempt("The answer is 3.", "3", True)])
    monkeypatch.setattr(views, "DIALOGUES_PER_PAGE", 1)  # a count reaches at least its page
    monkeypatch.setattr(pagination, "COUNT_LIMIT", 4)
    monkeypatch.setattr(pagination, "SEARCH_COUNT_LIMIT", 2)

    def count_line(params: dict[str, Any]) -> str:
        html = researcher_client.get(reverse("dialogue_list"), params).content.decode()
        return re.search(r'<p class="muted result-count">([^<]*)', html)[1]  # type: ignore[index]

    assert count_line({"run": run.pk}).startswith("More than 4 transcripts")
    # SQLite looks into each turn for a word, and so counts only to the end of the page.
    search_limit = 1 if search.searches_turns("answer") else 2
    assert count_line({"run": run.pk, "q": "answer"}).startswith(f"More than {search_limit} ")
    monkeypatch.setattr(pagination, "COUNT_LIMIT", 10)
    assert count_line({"run": run.pk}).startswith("5 transcripts")


def test_the_list_says_how_many_dialogues_runs_still_play(researcher_client: Any) -> None:
    """A dialogue is listed once it ends: the count says how many more a run still playing (or
    waiting for a person) will add, and each row names its run by number, its name on hover."""
    from webapp.runs.models import Run

    run = make_run("Demo: Lost in Conversation, sharded", TaskSetFactory())
    for task in TaskFactory.create_batch(2, task_set=run.task_set):
        store(run, task.pk, 0, "a_first", [attempt("The answer is 3.", "3", True)])
    done = make_run("done", run.task_set)
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.WAITING, progress_total=5, progress_done=2
    )
    Run.objects.filter(pk=done.pk).update(status=Run.Status.SUCCEEDED, progress_total=9)

    def results(params: dict[str, Any]) -> str:
        return researcher_client.get(reverse("dialogue_list"), params).content.decode()

    page = results({"run": run.pk})
    assert "2 transcripts match these filters. 3 dialogues of this run (playing, or waiting" in page
    assert (
        f'<td title="Demo: Lost in Conversation, sharded"><a href="/runs/{run.pk}/">#{run.pk} '
        in page
    )
    assert "3 dialogues of runs still playing (playing, or waiting for a person) will be" in (
        results({})
    )
    assert "will be listed" not in results({"run": done.pk}), "an ended run adds nothing"
    # The run criteria pick the runs counted; the dialogues' own say only some will match.
    assert "3 dialogues of runs still playing" in results({"task_set": run.task_set_id})
    assert "will be listed" not in results({"task_set": TaskSetFactory().pk})
    assert "will be listed" not in results({"student": done.student_id})
    assert "will be listed" not in results({"teacher": "person"})
    assert (
        "3 dialogues of this run (playing, or waiting for a person) are not over yet: those that"
        " match will be listed as they end." in results({"run": run.pk, "outcome": "solved"})
    )


@pytest.mark.parametrize(
    "text", ["parity", " Carry ", "the", "self-check", "1e5x", "carry ten", '"carry"', "naïve"]
)
def test_one_word_searches_are_told_apart_as_postgresql_parses_them(text: str) -> None:
    from webapp.dialogues import search

    if connection.vendor != "postgresql":
        assert search.searches_turns(text)  # SQLite always reads the turns
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT numnode(websearch_to_tsquery('english', %s))", [text])
        (nodes,) = cursor.fetchone()
    assert search.is_one_lexeme(text) == (nodes <= 1)


def test_dialogue_page_names_every_model_and_reads_no_field_on_its_own(
    researcher_client: Any, corpus: Any
) -> None:
    from django.conf import settings

    late = Dialogue.objects.get(seed=NAMES.index("a_late"))

    def page() -> tuple[str, int]:
        with CaptureQueriesContext(connection) as queries:
            response = researcher_client.get(reverse("dialogue_detail", args=[late.pk]))
        return response.content.decode(), len(queries)

    # The session (unless Redis holds it), the user, the dialogue, its turns, the other runs:
    # a field the page shows read on its own would add one.
    fixed = 4 + settings.SESSION_ENGINE.endswith(".db")
    html, queries = page()
    assert queries == fixed
    assert "user simulator" not in html and "judge" not in html
    run = late.run
    run.teacher, run.user_simulator, run.judge = (
        StudentFactory(name="the teacher"), StudentFactory(name="the simulator"),
        StudentFactory(name="the judge"),
    )  # fmt: skip
    run.save()
    html, queries = page()
    for name in (run.student.name, "the teacher", "the simulator", "the judge"):
        assert f"<strong>{name}</strong>" in html
    assert queries == fixed + 1  # the user simulator's and the judge's names, which few runs have
