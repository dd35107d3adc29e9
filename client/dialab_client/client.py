"""``Dialab``: one HTTP session to a Dialab server, acting as the token's owner."""

from __future__ import annotations

import builtins
import json
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl

import httpx

from dialab_client.catalog import Models, Protocols, TaskSets
from dialab_client.errors import DialabError
from dialab_client.experiments import Experiments
from dialab_client.labels import Labels
from dialab_client.models import (
    Comparison,
    Dialogue,
    DialogueRow,
    Figures,
    Me,
    Run,
    parse_figures,
    parse_me,
    parse_row,
)

PAGE = 100  # runs per request when listing


class Dialab:
    def __init__(
        self, url: str | None = None, token: str | None = None, *, timeout: float = 30.0
    ) -> None:
        """``url``: the server (default ``$DIALAB_URL``); ``token``: a personal API token made
        on the server's "API tokens" page (default ``$DIALAB_TOKEN``)."""
        url = url or os.environ.get("DIALAB_URL", "")
        token = token or os.environ.get("DIALAB_TOKEN", "")
        if not url or not token:
            raise ValueError(
                "Give the server's URL and an API token (or set DIALAB_URL and DIALAB_TOKEN); "
                "make a token on the server's API tokens page."
            )
        self.http = httpx.Client(
            base_url=f"{url.rstrip('/')}/api/v1",
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
        )
        self.runs = Runs(self)
        self.dialogues = Dialogues(self)
        self.task_sets = TaskSets(self)
        self.models = Models(self)
        self.protocols = Protocols(self)
        self.labels = Labels(self)
        self.experiments = Experiments(self)

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.http.request(method, path, **kwargs)
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                raise DialabError(response.status_code, response.text) from None
            raise DialabError(response.status_code, body.get("detail"), body.get("problems"))
        return response.json()

    def pages(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        key: str = "id",
        after: str = "after",
        start: int = 0,
    ) -> Iterator[Any]:
        """Every item of a list endpoint, walked in ``key`` order: each page asks for the
        items after the last ``key`` read (the ``after`` parameter; ``start`` begins). Unlike
        pages by offset, which move when an item before them is added or deleted, a walk
        reads every item there throughout exactly once."""
        last = start
        while True:
            page = self.request("GET", path, params={**(params or {}), after: last, "limit": PAGE})
            yield from page
            if len(page) < PAGE:
                return
            last = page[-1][key]

    def me(self) -> Me:
        return parse_me(self.request("GET", "/me"))

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Dialab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Runs:
    def __init__(self, lab: Dialab) -> None:
        self.lab = lab

    def list(self, *, kind: str | None = None, status: str | None = None) -> builtins.list[Run]:
        """Every run (newest first), of one ``kind`` (eval, train, generate) or ``status``."""
        params = {name: value for name, value in (("kind", kind), ("status", status)) if value}
        walked = [Run.parse(run) for run in self.lab.pages("/runs", params)]
        return walked[::-1]  # walked in id order: the oldest first

    def get(self, run_id: int) -> Run:
        return Run.parse(self.lab.request("GET", f"/runs/{run_id}"))

    def launch(
        self,
        *,
        task_set: int,
        protocol: int,
        student: int,
        teacher: int | None = None,
        user_simulator: int | None = None,
        judge: int | None = None,
        samples_per_task: int = 1,
        batch_size: int | None = None,
        seed: int = 0,
        name: str = "",
        people: Iterable[int] = (),
    ) -> Run:
        """Queue an evaluation (ids from ``task_sets.list()``, ``protocols.list()``,
        ``models.list()``). A refusal raises ``DialabError`` with the launch form's
        ``problems``, field by field."""
        body = {
            "task_set": task_set, "protocol": protocol, "student": student, "teacher": teacher,
            "user_simulator": user_simulator, "judge": judge,
            "samples_per_task": samples_per_task, "batch_size": batch_size, "seed": seed,
            "name": name, "people": list(people),
        }  # fmt: skip
        return Run.parse(self.lab.request("POST", "/runs/evaluations", json=body))

    def train(
        self,
        *,
        base_model: int,
        selection: str,
        eval_task_set: int,
        eval_protocol: int,
        eval_teacher: int | None = None,
        eval_samples: int = 1,
        evaluate_trained_tasks: bool = False,
        question_writer: int | None = None,
        name: str = "",
        **settings: Any,
    ) -> Run:
        """Launch offline SML: fine-tune ``base_model`` on the dialogues the transcript filter
        ``selection`` selects (``"run=12&outcome=solved"``, frozen at launch), then evaluate
        the trained model and its base on the held-out ``eval_task_set``. ``settings``: the
        hyperparameters by name (``training_settings()``), the form's defaults otherwise."""
        body = {
            "base_model": base_model, "selection": selection, "eval_task_set": eval_task_set,
            "eval_protocol": eval_protocol, "eval_teacher": eval_teacher,
            "eval_samples": eval_samples, "evaluate_trained_tasks": evaluate_trained_tasks,
            "question_writer": question_writer, "name": name, "settings": settings,
        }  # fmt: skip
        return Run.parse(self.lab.request("POST", "/runs/training", json=body))

    def train_online(
        self,
        *,
        base_model: int,
        task_set: int,
        protocol: int,
        eval_task_set: int,
        eval_protocol: int,
        teacher: int | None = None,
        eval_teacher: int | None = None,
        eval_samples: int = 1,
        evaluate_trained_tasks: bool = False,
        single_turn_baseline: bool = True,
        priming_selection: str = "",
        name: str = "",
        **settings: Any,
    ) -> Run:
        """Launch online SML: ``base_model`` plays ``task_set`` under ``protocol`` and learns
        from its rewards (with ``single_turn_baseline``, a sibling single-turn RL run on the
        same budget; ``runs.list(kind="train")`` lists both)."""
        body = {
            "base_model": base_model, "task_set": task_set, "protocol": protocol,
            "teacher": teacher, "eval_task_set": eval_task_set, "eval_protocol": eval_protocol,
            "eval_teacher": eval_teacher, "eval_samples": eval_samples,
            "evaluate_trained_tasks": evaluate_trained_tasks,
            "single_turn_baseline": single_turn_baseline,
            "priming_selection": priming_selection, "name": name, "settings": settings,
        }  # fmt: skip
        return Run.parse(self.lab.request("POST", "/runs/online-training", json=body))

    def training_settings(self) -> dict[str, builtins.list[dict[str, Any]]]:
        """The hyperparameters ``train`` (``offline``) and ``train_online`` (``online``) take,
        with their defaults, bounds and help."""
        found: dict[str, builtins.list[dict[str, Any]]] = self.lab.request(
            "GET", "/runs/training-settings"
        )
        return found

    def compare(
        self, run_ids: Iterable[int], *, baseline: int | None = None, by_seed: bool = True
    ) -> Comparison:
        """The runs compared as the compare page compares them: one line per configuration
        (seeds pooled, unless ``by_seed=False``), each line's difference from the line of the
        run ``baseline`` (default: the oldest run's), paired over the tasks both played."""
        params: dict[str, Any] = {"runs": list(run_ids), "by_seed": by_seed}
        if baseline is not None:
            params["baseline"] = baseline
        return Comparison.parse(self.lab.request("GET", "/experiments/compare", params=params))

    def cancel(self, run_id: int) -> Run:
        return Run.parse(self.lab.request("POST", f"/runs/{run_id}/cancel"))

    def figures(self, run_ids: int | Iterable[int]) -> Figures:
        """The runs' figures, as their pages and metrics CSVs give them."""
        ids = [run_ids] if isinstance(run_ids, int) else list(run_ids)
        rows = []
        for run_id in ids:
            body = self.lab.request("GET", f"/runs/{run_id}/figures")
            rows += parse_figures(run_id, body["rows"])
        return Figures(rows)

    def wait(
        self,
        run_ids: int | Iterable[int],
        *,
        progress: bool = False,
        poll_seconds: float = 2.0,
        timeout: float | None = None,
    ) -> builtins.list[Run]:
        """Wait until every run has finished (succeeded, failed or been cancelled); with
        ``progress``, a bar of the dialogues played over all of them (tqdm where installed)."""
        ids = [run_ids] if isinstance(run_ids, int) else list(run_ids)
        deadline = None if timeout is None else time.monotonic() + timeout
        bar = _ProgressBar(len(ids)) if progress else None
        try:
            while True:
                runs = [self.get(run_id) for run_id in ids]
                if bar is not None:
                    bar.show(runs)
                if all(run.is_finished for run in runs):
                    return runs
                if deadline is not None and time.monotonic() > deadline:
                    unfinished = [run.id for run in runs if not run.is_finished]
                    raise TimeoutError(f"runs still playing after {timeout} s: {unfinished}")
                time.sleep(poll_seconds)
        finally:
            if bar is not None:
                bar.close()


class Dialogues:
    def __init__(self, lab: Dialab) -> None:
        self.lab = lab

    def iter(
        self, query: str | Mapping[str, Any] = "", *, per_page: int = 500
    ) -> Iterator[DialogueRow]:
        """Every transcript matching ``query``, the transcript list's filter as on its page
        (``"run=12&outcome=solved"``, or a dict), in id order (oldest first; the query's
        ``sort`` and ``page`` do not apply). Each comes once, even while a run adds more: the
        pages walk on from the last id read (``after``), so the ones added meanwhile come at
        the end. A filter the list would ignore (a typo, an unknown run) raises ``DialabError``
        rather than list everything."""
        params = [
            (name, value)
            for name, value in _params(query)
            if name not in ("page", "per_page", "sort", "after")
        ]
        after: int | None = 0
        while after is not None:
            body = self.lab.request(
                "GET", "/dialogues", params=[*params, ("after", after), ("per_page", per_page)]
            )
            if body["ignored"]:
                raise DialabError(400, "; ".join(body["ignored"]))
            yield from (parse_row(item) for item in body["items"])
            after = body["next_after"]

    def get(self, dialogue_id: int) -> Dialogue:
        return Dialogue.parse(self.lab.request("GET", f"/dialogues/{dialogue_id}"))

    def export(
        self, query: str | Mapping[str, Any] = "", *, include_private: bool = False
    ) -> Iterator[dict[str, Any]]:
        """Every transcript matching ``query`` with its turns, verdicts and labels: the export
        page's JSONL records, streamed (researchers only). ``include_private`` adds what the
        teacher privately saw and the tasks' references."""
        params = [*_params(query), ("include_private", str(include_private).lower())]
        with self.lab.http.stream("GET", "/dialogues/export.jsonl", params=params) as response:
            if response.status_code >= 400:
                response.read()
                body = response.json()
                detail = "; ".join(body.get("ignored", [])) or body.get("detail")
                raise DialabError(response.status_code, detail)
            for line in response.iter_lines():
                if line:
                    yield json.loads(line)


def _params(query: str | Mapping[str, Any]) -> list[tuple[str, Any]]:
    """A transcript filter as query parameters: the list page's query string, or a dict."""
    return parse_qsl(query.lstrip("?")) if isinstance(query, str) else list(query.items())


class _ProgressBar:
    """Dialogues played over all the runs waited for."""

    def __init__(self, runs: int) -> None:
        try:
            from tqdm import tqdm
        except ImportError:
            self.bar = None
        else:
            self.bar = tqdm(total=0, unit="dialogue", desc=f"{runs} run(s)")

    def show(self, runs: Sequence[Run]) -> None:
        done = sum(run.progress_done for run in runs)
        total = sum(run.progress_total for run in runs)
        finished = sum(run.is_finished for run in runs)
        if self.bar is None:
            print(f"{done}/{total} dialogues, {finished}/{len(runs)} runs finished", flush=True)
            return
        self.bar.total = total
        self.bar.n = done
        self.bar.set_postfix(finished=f"{finished}/{len(runs)}")
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
